import { describe, expect, it } from 'vitest';
import { decodeCursor, encodeCursor, toConnection } from '../../../src/gateway/schema/connection.js';
import { pagedConnection } from '../../../src/gateway/schema/paging.js';

describe('toConnection', () => {
  it('gives each item its cursor by offset, and the page its first and last', () => {
    const page = toConnection(['a', 'b', 'c'], 10, { offset: 4, limit: 3 });
    expect(page.nodes).toEqual(['a', 'b', 'c']);
    expect(page.edges).toEqual([
      { node: 'a', cursor: encodeCursor(4) },
      { node: 'b', cursor: encodeCursor(5) },
      { node: 'c', cursor: encodeCursor(6) },
    ]);
    expect(page.edges.map((e) => decodeCursor(e.cursor))).toEqual([4, 5, 6]);
    expect(page.pageInfo).toEqual({
      hasNextPage: true,
      hasPreviousPage: true,
      startCursor: encodeCursor(4),
      endCursor: encodeCursor(6),
    });
    expect(page.totalCount).toBe(10);
  });

  it('has no cursors for an empty page', () => {
    const page = toConnection([], 0, { offset: 0, limit: 20 });
    expect(page.edges).toEqual([]);
    expect(page.pageInfo).toEqual({
      hasNextPage: false,
      hasPreviousPage: false,
      startCursor: null,
      endCursor: null,
    });
  });

  it('makes the edges only when they are read, once', () => {
    const items = [{ id: 1 }];
    const page = toConnection(items, 1, { offset: 0, limit: 20 });
    expect(Object.getOwnPropertyDescriptor(page, 'edges')?.get).toBeInstanceOf(Function);
    expect(page.edges).toBe(page.edges);
    expect(page.edges[0]!.node).toBe(items[0]);
  });

  it('keeps the edges unmade in a paged connection, which carries its page', () => {
    const items = [{ id: 1 }, { id: 2 }];
    const page = { offset: 10, limit: 2 };
    const paged = pagedConnection({ items, total: 30 }, page);
    expect(Object.getOwnPropertyDescriptor(paged, 'edges')?.get).toBeInstanceOf(Function);
    expect(paged.page).toBe(page);
    expect(paged.nodes).toBe(items);
    expect(paged.edges.map((e) => decodeCursor(e.cursor))).toEqual([10, 11]);
    expect(paged.pageInfo.hasNextPage).toBe(true);
  });

  it("leaves out the items it is told not to answer, each kept at its own cursor, the page info the whole page's", () => {
    const page = toConnection(
      ['a', 'b', 'c', 'd'],
      9,
      { offset: 4, limit: 4 },
      (item) => item === 'b' || item === 'd',
    );
    expect(page.nodes).toEqual(['b', 'd']);
    expect(page.edges).toEqual([
      { node: 'b', cursor: encodeCursor(5) },
      { node: 'd', cursor: encodeCursor(7) },
    ]);
    expect(page.pageInfo).toEqual({
      hasNextPage: true,
      hasPreviousPage: true,
      startCursor: encodeCursor(4),
      endCursor: encodeCursor(7),
    });
    expect(page.totalCount).toBe(9);
  });
});
