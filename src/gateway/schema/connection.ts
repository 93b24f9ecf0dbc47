import { ArgsType, Field, Int, ObjectType, type ClassType } from 'type-graphql';
import { badInput } from '../../kernel/errors.js';

/**
 * Relay-style connections. Cursors are opaque (base64url of an offset into the stable ordering
 * the list query defines); `first` defaults to 20 and may be at most 100.
 */
export const DEFAULT_PAGE = 20;
export const MAX_PAGE = 100;

@ObjectType({ simpleResolvers: true })
export class PageInfo {
  @Field(() => Boolean)
  hasNextPage!: boolean;

  @Field(() => Boolean)
  hasPreviousPage!: boolean;

  @Field(() => String, { nullable: true })
  startCursor?: string | null;

  @Field(() => String, { nullable: true })
  endCursor?: string | null;
}

@ArgsType()
export class PageArgs {
  @Field(() => Int, { nullable: true, description: `Page size, 1–${MAX_PAGE} (default ${DEFAULT_PAGE}).` })
  first?: number | null;

  @Field(() => String, { nullable: true, description: 'Return items after this cursor.' })
  after?: string | null;
}

export interface Page {
  offset: number;
  limit: number;
}

export function encodeCursor(offset: number): string {
  return Buffer.from(`o:${offset}`).toString('base64url');
}

export function decodeCursor(cursor: string): number {
  const text = Buffer.from(cursor, 'base64url').toString();
  const match = /^o:(\d+)$/.exec(text);
  if (!match) throw badInput('after', 'is not a cursor returned by this API');
  return Number(match[1]);
}

/** Validates first/after and turns them into offset/limit. */
export function toPage(args: { first?: number | null; after?: string | null }): Page {
  const first = args.first ?? DEFAULT_PAGE;
  if (!Number.isInteger(first) || first < 1 || first > MAX_PAGE) {
    throw badInput('first', `must be between 1 and ${MAX_PAGE} (got ${first})`);
  }
  return { offset: args.after ? decodeCursor(args.after) + 1 : 0, limit: first };
}

export interface ConnectionShape<T> {
  edges: Array<{ cursor: string; node: T }>;
  nodes: T[];
  pageInfo: PageInfo;
  totalCount: number;
}

/**
 * A page as its connection. The edges (a cursor per item) are made when the executor reads them:
 * a selection of `nodes` alone, as the REST shims' lists make, needs no cursor but the page's two.
 * `answers`, when given, leaves out of `edges` and `nodes` the items it refuses (an execution that
 * answers a few items of a kept list again, src/gateway/pipeline/answers.ts); the rest is the
 * whole page's.
 */
export function toConnection<T>(
  items: T[],
  totalCount: number,
  page: Page,
  answers?: (item: T) => boolean,
): ConnectionShape<T> {
  let edges: ConnectionShape<T>['edges'] | undefined;
  const last = items.length - 1;
  const places = answers && [...items.keys()].filter((i) => answers(items[i]!));
  return {
    get edges() {
      return (edges ??= places
        ? places.map((i) => ({ node: items[i]!, cursor: encodeCursor(page.offset + i) }))
        : items.map((node, i) => ({ node, cursor: encodeCursor(page.offset + i) })));
    },
    nodes: places ? places.map((i) => items[i]!) : items,
    totalCount,
    pageInfo: {
      hasNextPage: page.offset + items.length < totalCount,
      hasPreviousPage: page.offset > 0,
      startCursor: last < 0 ? null : encodeCursor(page.offset),
      endCursor: last < 0 ? null : encodeCursor(page.offset + last),
    },
  };
}

/** Declares `<Name>Connection` and `<Name>Edge` object types for a node type. */
export function Connection<T extends object>(nodeType: ClassType<T>, name: string) {
  @ObjectType(`${name}Edge`, { simpleResolvers: true })
  class Edge {
    @Field(() => String)
    cursor!: string;

    @Field(() => nodeType)
    node!: T;
  }

  @ObjectType(`${name}Connection`, { simpleResolvers: true })
  class ConnectionType {
    @Field(() => [Edge])
    edges!: Edge[];

    @Field(() => [nodeType], { description: 'The nodes of `edges`, for clients that need no cursors.' })
    nodes!: T[];

    @Field(() => PageInfo)
    pageInfo!: PageInfo;

    @Field(() => Int)
    totalCount!: number;
  }
  return ConnectionType;
}
