import 'reflect-metadata';
import {
  execute,
  parse,
  type GraphQLFieldResolver,
  type GraphQLObjectType,
  type GraphQLSchema,
} from 'graphql';
import {
  Arg,
  Args,
  ArgsType,
  buildSchemaSync,
  Ctx,
  Field,
  FieldResolver,
  InputType,
  ObjectType,
  Mutation,
  Query,
  Resolver,
  Root,
  UseMiddleware,
} from 'type-graphql';
import { beforeAll, describe, expect, it } from 'vitest';
import { getMetadataStorage } from 'type-graphql';
import { buildGatewaySchema } from '../../../src/gateway/schema/build.js';
import { MODULES } from '../../../src/modules.js';
import {
  assertRebinding,
  bindFieldResolversSynchronously,
  bindRootResolversSynchronously,
  readGettersDirectly,
  resolverContainer,
} from '../../../src/gateway/pipeline/sync-resolvers.js';

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

@ArgsType()
class FilteredPageArgs extends PageArgs {
  @Field(() => Number, { nullable: true })
  offset?: number | null;

  @Field(() => EchoInput, { nullable: true })
  where?: EchoInput | null;
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

  /** What the method is handed: the class, and every own property with its value. */
  @Query(() => String)
  filteredPage(@Args(() => FilteredPageArgs) args: FilteredPageArgs): string {
    const entries = Object.entries(args).map(([key, value]) => [
      key,
      value instanceof EchoInput ? `EchoInput ${value.text}` : value,
    ]);
    return JSON.stringify([args instanceof FilteredPageArgs, entries]);
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

@ObjectType({ simpleResolvers: true })
class Ship {
  @Field(() => String)
  name!: string;
}

/**
 * What `tsc` emits for a decorated method (`design:paramtypes`), which type-graphql's `@Root()`
 * reads to convert the root to its class; vitest's transform emits no such metadata. Written by a
 * decorator on the last parameter, which runs before `@Root()` on the first.
 */
const paramTypes =
  (...types: unknown[]): ParameterDecorator =>
  (prototype, key) =>
    Reflect.defineMetadata('design:paramtypes', types, prototype, key!);

@Resolver(() => Ship)
class ShipResolver {
  @Query(() => [Ship])
  ships(): Ship[] {
    return [Object.assign(new Ship(), { name: 'Aurora' }), { name: 'Borealis' } as Ship];
  }

  @FieldResolver(() => String)
  label(@Root() ship: Ship, @Ctx() @paramTypes(Ship, Object) ctx: TestContext): string {
    return `${ctx.prefix}${ship.name}${ship instanceof Ship ? '' : ' (plain)'}`;
  }

  @FieldResolver(() => Boolean)
  isShared(): boolean {
    return this === resolverContainer.get(ShipResolver, undefined as never);
  }

  @FieldResolver(() => String)
  @UseMiddleware(async (_data, next) => `mw:${String(await next())}`)
  wrapped(@Root() @paramTypes(Ship) ship: Ship): string {
    return ship.name;
  }
}

@ObjectType({ simpleResolvers: true })
class Hull {
  @Field(() => String)
  code!: string;

  @Field(() => String)
  get label(): string {
    return `hull ${this.code}`;
  }

  @Field(() => String)
  @UseMiddleware(async (_data, next) => `mw:${String(await next())}`)
  get guarded(): string {
    return this.code;
  }
}

@Resolver(() => Hull)
class HullResolver {
  @Query(() => [Hull])
  hulls(): Hull[] {
    // A row with the class's prototype, as src/db/plain.ts gives read rows.
    return [
      Object.assign(new Hull(), { code: 'A1' }),
      Object.setPrototypeOf({ code: 'B2' }, Hull.prototype) as Hull,
    ];
  }
}

type Resolve = GraphQLFieldResolver<unknown, TestContext, Record<string, unknown>>;

let schema: GraphQLSchema;
let rewritten: number;
let rewrittenFields: number;
let gettersRead: number;

beforeAll(() => {
  schema = buildSchemaSync({
    resolvers: [EchoResolver, ShipResolver, HullResolver],
    validate: false,
    container: resolverContainer,
    emitSchemaFile: false,
  });
  rewritten = bindRootResolversSynchronously(schema, [EchoResolver]);
  rewrittenFields = bindFieldResolversSynchronously(schema, [EchoResolver, ShipResolver]);
  gettersRead = readGettersDirectly(schema);
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
    // echo, maybe, isShared, boom, inputKind, page, filteredPage, shout — not `wrapped` (middleware).
    expect(rewritten).toBe(8);
    expect(call('Query', 'page', { first: 3 })).toBe(3);
    expect(call('Query', 'page', {})).toBe(20);
    expect(call('Query', 'wrapped', { text: 'x' })).toBeInstanceOf(Promise);
  });

  it('binds an args class as type-graphql does, and hands it object values', async () => {
    // The same resolvers as type-graphql binds them, in a schema of their own.
    const original = buildSchemaSync({
      resolvers: [EchoResolver],
      validate: false,
      container: resolverContainer,
      emitSchemaFile: false,
    });
    const resolve = original.getQueryType()!.getFields().filteredPage!.resolve as Resolve;
    const cases = [{}, { first: 3 }, { first: null, offset: 40 }, { offset: 0, where: null }];
    for (const args of cases) {
      const answer = call('Query', 'filteredPage', args);
      expect(answer, JSON.stringify(args)).not.toBeInstanceOf(Promise);
      expect(answer).toBe(await resolve(undefined, args, ctx, undefined as never));
    }
    expect(call('Query', 'filteredPage', { offset: 2 })).toBe(
      JSON.stringify([
        true,
        [
          ['first', 20],
          ['offset', 2],
        ],
      ]),
    );
    const withObject = call('Query', 'filteredPage', { first: 5, where: { text: 'w' } });
    expect(withObject).toBeInstanceOf(Promise);
    expect(await withObject).toBe(
      await resolve(undefined, { first: 5, where: { text: 'w' } }, ctx, undefined as never),
    );
    expect(await withObject).toContain('EchoInput w');
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

describe('bindFieldResolversSynchronously and simple resolvers', () => {
  const shipField = () =>
    (schema.getTypeMap().Ship as GraphQLObjectType).toConfig() as unknown as {
      fields: Record<string, { resolve?: Resolve }>;
    };

  it('leaves plain properties of a simpleResolvers type to the executor: no resolver at all', () => {
    expect(shipField().fields.name!.resolve).toBeUndefined();
  });

  it('rewrites the field resolvers it can bind, not the one with a middleware', () => {
    expect(rewrittenFields).toBe(2); // label, isShared
    const { fields } = shipField();
    const ship = Object.assign(new Ship(), { name: 'Aurora' });
    // type-graphql's own resolver for `wrapped` runs its middleware chain: a promise.
    expect(fields.wrapped!.resolve!(ship, {}, ctx, undefined as never)).toBeInstanceOf(Promise);
    expect(fields.label!.resolve!(ship, {}, ctx, undefined as never)).toBe('> Aurora');
  });

  it('answers as type-graphql does, a root that is not yet an instance converted by type-graphql', async () => {
    const result = await execute({
      schema,
      document: parse('{ ships { name label isShared wrapped } }'),
      contextValue: ctx,
    });
    expect(result).toEqual({
      data: {
        ships: [
          { name: 'Aurora', label: '> Aurora', isShared: true, wrapped: 'mw:Aurora' },
          // type-graphql's convertToType made a Ship of the plain object before `label` saw it.
          { name: 'Borealis', label: '> Borealis', isShared: true, wrapped: 'mw:Borealis' },
        ],
      },
    });
  });
});

describe('readGettersDirectly', () => {
  const hullFields = () => (schema.getTypeMap().Hull as GraphQLObjectType).getFields();

  it('leaves a getter field to the executor, and keeps the resolver of one with a middleware', () => {
    expect(gettersRead).toBe(1);
    expect(hullFields().label!.resolve).toBeUndefined();
    expect(hullFields().guarded!.resolve).toBeInstanceOf(Function);
  });

  it("leaves the gateway's Protocol getters to the executor (fails when type-graphql's metadata changes)", () => {
    const protocol = buildGatewaySchema(MODULES).getType('Protocol') as GraphQLObjectType;
    for (const name of ['aumUsd', 'minimumInvestmentUsd', 'currency'])
      expect(protocol.getFields()[name]!.resolve, name).toBeUndefined();
  });

  it('answers as type-graphql did, for instances and rows with the prototype', async () => {
    const result = await execute({
      schema,
      document: parse('{ hulls { code label guarded } }'),
      contextValue: ctx,
    });
    expect(result).toEqual({
      data: {
        hulls: [
          { code: 'A1', label: 'hull A1', guarded: 'mw:A1' },
          { code: 'B2', label: 'hull B2', guarded: 'mw:B2' },
        ],
      },
    });
  });
});

type Metadata = Parameters<typeof assertRebinding>[3];

describe('assertRebinding: the fast path fails loudly when type-graphql changes', () => {
  const resolvers = [EchoResolver, ShipResolver, HullResolver];
  const storage = getMetadataStorage();
  const counts = () => ({ root: rewritten, field: rewrittenFields });

  it('passes while the metadata describes every root field and the passes took some over', () => {
    expect(() => assertRebinding(schema, resolvers, counts())).not.toThrow();
  });

  it('fails naming the fields when the metadata no longer lists the root handlers', () => {
    const renamed = { queries: [], mutations: [], fieldResolvers: storage.fieldResolvers };
    expect(() => assertRebinding(schema, resolvers, counts(), renamed)).toThrow(
      /no longer matches src\/gateway\/pipeline\/sync-resolvers\.ts: .*Query field\(s\) have no handler in it \(echo, maybe, isShared\).*Mutation field/,
    );
  });

  it('fails on a parameter kind it does not know', () => {
    // A test double of the metadata: the same handlers, one parameter kind renamed.
    const changed = {
      ...storage,
      queries: storage.queries.map((q) =>
        q.target === EchoResolver && q.methodName === 'echo'
          ? { ...q, params: q.params!.map((p) => ({ ...p, kind: 'argument' as 'arg' })) }
          : q,
      ),
    };
    expect(() => assertRebinding(schema, resolvers, counts(), changed as unknown as Metadata)).toThrow(
      /unknown parameter kinds argument/,
    );
  });

  it('fails when the root pass took nothing over', () => {
    expect(() => assertRebinding(schema, resolvers, { root: 0, field: rewrittenFields })).toThrow(
      /no Query or Mutation resolver was rebound/,
    );
  });
});
