import { ArgsType, Field, FieldResolver, Int, Resolver, Root, type ClassType } from 'type-graphql';
import { PageArgs, toConnection, toPage, type Page } from './connection.js';
import { badInput } from '../../kernel/errors.js';

/**
 * Port-ops lists take Relay `first`/`after`, or `offset` instead of `after` so the REST shims
 * (`limit`/`offset`) run the very same field.
 */
@ArgsType()
export class OffsetPageArgs extends PageArgs {
  @Field(() => Int, {
    nullable: true,
    description: 'Skip this many items (alternative to `after`, used by the REST routes).',
  })
  offset?: number | null;
}

export function pageOf(args: OffsetPageArgs): Page {
  if (args.offset === undefined || args.offset === null) return toPage(args);
  if (args.after) throw badInput('offset', 'give either after or offset, not both');
  if (!Number.isInteger(args.offset) || args.offset < 0)
    throw badInput('offset', `must be 0 or more (got ${args.offset})`);
  return { ...toPage({ first: args.first }), offset: args.offset };
}

export interface PagedConnection<T> extends ReturnType<typeof toConnection<T>> {
  page: Page;
}

export function pagedConnection<T>(
  { items, total }: { items: T[]; total: number },
  page: Page,
  answers?: (item: T) => boolean,
): PagedConnection<T> {
  // Not a spread: that would read `edges`, which makes a cursor per item that a list read by its
  // `nodes` (every REST list) never shows.
  return Object.assign(toConnection(items, total, page, answers), { page });
}

/** Adds `limit` and `offset` (the page that was served) to a connection type, for REST bodies. */
export function pageEchoResolver(connection: ClassType) {
  @Resolver(() => connection)
  class PageEchoResolver {
    @FieldResolver(() => Int, { description: 'The page size that was served.' })
    limit(@Root() root: PagedConnection<unknown>): number {
      return root.page.limit;
    }

    @FieldResolver(() => Int, { description: 'How many items precede this page.' })
    offset(@Root() root: PagedConnection<unknown>): number {
      return root.page.offset;
    }
  }
  return PageEchoResolver;
}
