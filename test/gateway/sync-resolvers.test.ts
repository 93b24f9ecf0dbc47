import 'reflect-metadata';
import { execute, parse, type GraphQLFieldResolver, type GraphQLSchema } from 'graphql';
import {
  Arg,
  Args,
  ArgsType,
  buildSchemaSync,
  Ctx,
  Field,
  InputType,
  Mutation,
  Query,
  Resolver,
  UseMiddleware,
} from 'type-graphql';
import { beforeAll, describe, expect, it } from 'vitest';
import { bindRootResolversSynchronously, resolverContainer } from '../../src/gateway/sync-resolvers.js';

@InputType()
class EchoInput {
  @Field(() => String)
  text!: string;
}

@ArgsType()
class PageArgs {
  @Field(() => Number, { nullable: true })
  first: number = 20;
}

interface TestContext {
  prefix: string;
}

@Resolver()
class EchoResolver {
  @Query(() => String)
  echo(@Arg('text', () => String) text: string, @Ctx() ctx: TestContext): string {
    return `${ctx.prefix}${text}`;
  }

  @Query(() => String, { nullable: true })
  maybe(@Arg('text', () => String, { nullable: true }) text: string | null): string | null {
    return text;
  }

  @Query(() => Boolean)
  isShared(): boolean {
    return this === resolverContainer.get(EchoResolver, undefined as never);
  }

  @Query(() => String)
  boom(@Arg('text', () => String) text: string): string {
    throw new Error(`boom ${text}`);
  }

  @Query(() => String)
  inputKind(@Arg('input', () => EchoInput) input: EchoInput): string {
    const { text } = input as { text: string };
    return input instanceof EchoInput ? `instance:${text}` : `plain:${text}`;
  }

  @Query(() => Number)
  page(@Args(() => PageArgs) args: PageArgs): number {
    return args.first;
  }

  @Query(() => String)
  @UseMiddleware(async (_data, next) => `mw:${String(await next())}`)
  wrapped(@Arg('text', () => String) text: string): string {
    return text;
  }

  @Mutation(() => String)
  shout(@Arg('text', () => String) text: string): string {
    return text.toUpperCase();
  }
}

type Resolve = GraphQLFieldResolver<unknown, TestContext, Record<string, unknown>>;

let schema: GraphQLSchema;
let rewritten: number;

beforeAll(() => {
  schema = buildSchemaSync({
    resolvers: [EchoResolver],
    validate: false,
    container: resolverContainer,
    emitSchemaFile: false,
  });
  rewritten = bindRootResolversSynchronously(schema, [EchoResolver]);
});

const ctx: TestContext = { prefix: '> ' };
const resolveOf = (type: 'Query' | 'Mutation', field: string): Resolve =>
  (type === 'Query' ? schema.getQueryType() : schema.getMutationType())!.getFields()[field]!
    .resolve as Resolve;
const call = (type: 'Query' | 'Mutation', field: string, args: Record<string, unknown>) =>
  resolveOf(type, field)(undefined, args, ctx, undefined as never);

describe('bindRootResolversSynchronously', () => {
  it('answers scalar-argument fields without a promise, with the same value type-graphql gives', () => {
    expect(call('Query', 'echo', { text: 'hi' })).toBe('> hi');
    expect(call('Query', 'maybe', { text: null })).toBeNull();
    expect(call('Query', 'maybe', {})).toBeUndefined();
    expect(call('Mutation', 'shout', { text: 'quiet' })).toBe('QUIET');
    expect(call('Query', 'isShared', {})).toBe(true);
  });

  it('rewrites only the fields whose every parameter it can bind', () => {
    // echo, maybe, isShared, boom, inputKind, shout — not `page` (@Args) nor `wrapped` (middleware).
    expect(rewritten).toBe(6);
    expect(call('Query', 'page', { first: 3 })).toBeInstanceOf(Promise);
    expect(call('Query', 'wrapped', { text: 'x' })).toBeInstanceOf(Promise);
  });

  it('hands object arguments to type-graphql, which makes input-class instances of them', async () => {
    const answer = call('Query', 'inputKind', { input: { text: 'a' } });
    expect(answer).toBeInstanceOf(Promise);
    expect(await answer).toBe('instance:a');
  });

  it('keeps the schema answers identical through execution, errors included', async () => {
    const result = await execute({
      schema,
      document: parse(
        '{ echo(text: "a") maybe(text: null) isShared inputKind(input: { text: "b" }) page wrapped(text: "c") boom(text: "d") }',
      ),
      contextValue: ctx,
    });
    expect(result.data).toBeNull(); // boom is non-null: its error nulls the whole data object
    expect(result.errors?.map((e) => [e.message, e.path])).toEqual([['boom d', ['boom']]]);
    const ok = await execute({
      schema,
      document: parse(
        '{ echo(text: "a") maybe(text: null) isShared inputKind(input: { text: "b" }) page wrapped(text: "c") }',
      ),
      contextValue: ctx,
    });
    expect(ok).toEqual({
      data: { echo: '> a', maybe: null, isShared: true, inputKind: 'instance:b', page: 20, wrapped: 'mw:c' },
    });
  });
});
