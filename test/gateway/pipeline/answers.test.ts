import { describe, expect, it, vi } from 'vitest';
import {
  buildSchema,
  GraphQLError,
  parse,
  type ExecutionResult,
  type OperationDefinitionNode,
} from 'graphql';
import type { AppServices } from '../../../src/gateway/schema/context.js';
import {
  AnswerCache,
  answerSourceOf,
  bodyOf,
  deepFreeze,
  type AnswerOutcome,
  keptWith,
  type AnswerSource,
  type Keepable,
  type ReadNotes,
} from '../../../src/gateway/pipeline/answers.js';

const schema = buildSchema(`
  type Query { calls(profile: ID): [Call!]! clock: String! }
  type Mutation { touch: Boolean! }
  type Call { id: ID! eta: String! vessel: Vessel! }
  type Vessel { name: String! hoursToArrival: Int! }
`);

function source(version: () => Promise<string>, coordinates: string[] = []): AnswerSource {
  return {
    name: 'test',
    coordinates: new Set(coordinates),
    scopeOf: (p) => p.accountId,
    version: () => version(),
  };
}

const COVERED = ['Query.calls', 'Call.id', 'Call.eta', 'Call.vessel', 'Vessel.name'];

function sourceFor(text: string): AnswerSource | undefined {
  return keepableFor(text)?.source;
}

function keepableFor(text: string): Keepable | undefined {
  const document = parse(text);
  const operation = document.definitions[0] as OperationDefinitionNode;
  const covered = {
    ...source(async () => '1', COVERED),
    keptOnlyWithout: new Set(['Query.calls(profile:)']),
  };
  return answerSourceOf(schema, document, operation, [covered]);
}

describe('which operations may be kept', () => {
  it('a query whose every field is covered, __typename and fragments included', () => {
    expect(sourceFor('{ calls { id __typename vessel { name } } }')?.name).toBe('test');
    expect(sourceFor('query Q { calls { ...C } } fragment C on Call { eta vessel { name } }')?.name).toBe(
      'test',
    );
  });

  it('not one that selects a field the source does not cover, even inside a fragment', () => {
    expect(sourceFor('{ calls { id } clock }')).toBeUndefined();
    expect(
      sourceFor('query Q { calls { ...C } } fragment C on Call { vessel { hoursToArrival } }'),
    ).toBeUndefined();
    expect(sourceFor('{ __schema { queryType { name } } }')).toBeUndefined();
  });

  it('with an argument the version does not cover only when it is absent or null, a variable checked per request', () => {
    expect(keepableFor('{ calls { id } }')?.unlessSet).toEqual([]);
    expect(keepableFor('{ calls(profile: null) { id } }')?.unlessSet).toEqual([]);
    expect(keepableFor('{ calls(profile: "p1") { id } }')).toBeUndefined();
    expect(keepableFor('query Q($p: ID = "p1") { calls(profile: $p) { id } }')).toBeUndefined();
    const keepable = keepableFor('query Q($p: ID) { calls(profile: $p) { id } }')!;
    expect(keepable.unlessSet).toEqual(['p']);
    expect(keptWith(keepable, undefined)).toBe(true);
    expect(keptWith(keepable, { p: null })).toBe(true);
    expect(keptWith(keepable, { p: 'p1' })).toBe(false);
  });

  it('never a mutation, nor a query beside one in the same document', () => {
    expect(sourceFor('mutation { touch }')).toBeUndefined();
    const document = parse('query Q { calls { id } } mutation M { touch }');
    const query = document.definitions[0] as OperationDefinitionNode;
    expect(answerSourceOf(schema, document, query, [source(async () => '1', COVERED)])).toBeUndefined();
    expect(sourceFor('{ calls { id } }')?.name).toBe('test');
  });
});

describe('AnswerCache', () => {
  const services = {} as AppServices; // the sources here ignore it
  const result = (n: number): ExecutionResult => ({ data: { calls: [{ id: String(n) }] } });

  function counting(): { outcomes: AnswerOutcome[]; cache: AnswerCache } {
    const outcomes: AnswerOutcome[] = [];
    return { outcomes, cache: new AnswerCache(1024 * 1024, (_s, o) => outcomes.push(o)) };
  }

  it('serves the kept result while the version stays, and executes again once it moves', async () => {
    let version = '1';
    let executions = 0;
    const src = source(async () => version);
    const { outcomes, cache } = counting();
    const run = () => cache.answer(src, services, 'acct', 'k', () => result(++executions));
    expect(await run()).toEqual(result(1));
    expect(await run()).toEqual(result(1));
    version = '2';
    expect(await run()).toEqual(result(2));
    expect(outcomes).toEqual(['miss', 'hit', 'miss']);
  });

  it('keeps a frozen copy: nothing downstream can change what later requests get', async () => {
    const { cache } = counting();
    const src = source(async () => '1');
    await cache.answer(src, services, 'acct', 'k', () => result(1));
    const kept = await cache.answer(src, services, 'acct', 'k', () => result(2));
    expect(() => {
      (kept.data!.calls as Array<{ id: string }>)[0]!.id = 'changed';
    }).toThrow(TypeError);
  });

  it('concurrent misses of one key and version share one execution', async () => {
    const { outcomes, cache } = counting();
    const src = source(async () => '1');
    let executions = 0;
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const execute = async () => {
      executions++;
      await gate;
      return result(executions);
    };
    const answers = Promise.all([1, 2, 3].map(() => cache.answer(src, services, 'acct', 'k', execute)));
    await new Promise((r) => setTimeout(r, 10));
    release();
    expect(await answers).toEqual([result(1), result(1), result(1)]);
    expect(executions).toBe(1);
    expect(outcomes.sort()).toEqual(['joined', 'joined', 'miss']);
  });

  it('does not keep a result with errors', async () => {
    const { outcomes, cache } = counting();
    const src = source(async () => '1');
    const failed: ExecutionResult = { data: null, errors: [] };
    Object.assign(failed, { errors: [new Error('boom')] });
    await cache.answer(src, services, 'acct', 'k', () => failed);
    await cache.answer(src, services, 'acct', 'k', () => result(1));
    expect(outcomes).toEqual(['miss', 'miss']);
  });

  it('executes as if nothing were kept when the version cannot be read', async () => {
    const { outcomes, cache } = counting();
    const src = source(() => Promise.reject(new Error('database down')));
    expect(await cache.answer(src, services, 'acct', 'k', () => result(7))).toEqual(result(7));
    expect(outcomes).toEqual([]);
    expect(cache.size.entries).toBe(0);
  });

  it('answers a kept result without a promise when the version is at hand', async () => {
    const { outcomes, cache } = counting();
    const src: AnswerSource = { ...source(async () => '1'), version: () => '1' };
    // The first request executes (a promise: concurrent misses share it); the next is served at once.
    expect(cache.answer(src, services, 'acct', 'k', () => result(1))).toBeInstanceOf(Promise);
    await new Promise((r) => setTimeout(r, 0));
    const kept = cache.answer(src, services, 'acct', 'k', () => result(2));
    expect(kept).not.toBeInstanceOf(Promise);
    expect(kept).toEqual(result(1));
    expect(outcomes).toEqual(['miss', 'hit']);
  });

  it('executes as if nothing were kept when reading the version throws at once', async () => {
    const { outcomes, cache } = counting();
    const src: AnswerSource = {
      ...source(async () => '1'),
      version: () => {
        throw new Error('database down');
      },
    };
    expect(await cache.answer(src, services, 'acct', 'k', () => result(7))).toEqual(result(7));
    expect(outcomes).toEqual([]);
    expect(cache.size.entries).toBe(0);
  });

  it('stays within its byte bound, dropping the least recently used first', async () => {
    const one = JSON.stringify(result(1).data).length;
    const cache = new AnswerCache(one * 2);
    const src = source(async () => '1');
    for (const k of ['a', 'b']) await cache.answer(src, services, 'acct', k, () => result(1));
    await cache.answer(src, services, 'acct', 'a', () => result(9)); // a is now the most recent
    await cache.answer(src, services, 'acct', 'c', () => result(3));
    expect(cache.size).toEqual({ entries: 2, bytes: one * 2 });
    // b was dropped: it executes again; a is still kept.
    expect(await cache.answer(src, services, 'acct', 'b', () => result(2))).toEqual(result(2));
    expect(await cache.answer(src, services, 'acct', 'c', () => result(8))).toEqual(result(3));
  });
});

describe('AnswerCache: carried and spliced over a version move', () => {
  const services = {} as AppServices;
  interface Row {
    id: string;
    n: number;
    port?: string;
  }

  /**
   * A source whose moves touched `touched` (undefined: cannot tell), and an operation over `rows`:
   * a list `calls` (a connection: `nodes`, `edges` with cursors, `total`) and a field `stamp`, its
   * resolvers noting what they read. `answered` counts the items each execution answers.
   */
  function setup() {
    const state = {
      version: '1',
      touched: undefined as ReadonlySet<string> | undefined,
      rows: [
        { id: 'a', n: 1 },
        { id: 'b', n: 1 },
        { id: 'c', n: 1 },
      ] as Row[],
      total: 3,
      stamp: 's',
      fail: false,
      answered: [] as number[],
      /** Keys an execution notes beside its list's (a row read outside the list). */
      noted: [] as string[],
    };
    const src: AnswerSource = {
      name: 'test',
      coordinates: new Set(),
      scopeOf: (p) => p.accountId,
      version: () => state.version,
      changed: () => state.touched,
    };
    const outcomes: AnswerOutcome[] = [];
    const cache = new AnswerCache(1024 * 1024, (_s, o) => outcomes.push(o));
    const execute = (notes?: ReadNotes): ExecutionResult => {
      const rows = state.rows.map((r) => ({ ...r }));
      for (const key of state.noted) notes?.keys.add(key);
      notes?.list(
        'calls',
        rows.map((r) => r.id),
        state.total,
      );
      const shown = rows.map((r, i) => ({ r, i })).filter(({ r }) => !notes || notes.answers(r.id));
      state.answered.push(shown.length);
      const calls = {
        total: state.total,
        edges: shown.map(({ r, i }) => ({ cursor: `o:${i}`, node: r })),
        nodes: shown.map(({ r }) => r),
      };
      if (state.fail) return { data: { calls, stamp: state.stamp }, errors: [new GraphQLError('boom')] };
      return { data: { calls, stamp: state.stamp } };
    };
    const read = () => cache.answer(src, services, 'acct', 'k', execute, true);
    const full = () => JSON.stringify(execute().data);
    return { state, outcomes, read, full };
  }

  it('carries the kept result over moves that touched none of its items', async () => {
    const { state, outcomes, read } = setup();
    await read();
    const kept = await read();
    state.version = '2';
    state.touched = new Set(['z']);
    expect(await read()).toBe(kept);
    expect(outcomes).toEqual(['miss', 'hit', 'carried']);
  });

  it('executes the touched items alone and puts them in their places: the bytes of a full execution', async () => {
    const { state, outcomes, read, full } = setup();
    await read();
    state.version = '2';
    state.touched = new Set(['b', 'z']);
    state.rows[1]!.n = 2;
    const spliced = await read();
    expect(outcomes).toEqual(['miss', 'spliced']);
    expect(state.answered).toEqual([3, 1]);
    expect(JSON.stringify(spliced.data)).toBe(full());
    // Kept at the new version, frozen like any kept result.
    const kept = await read();
    expect(outcomes.at(-1)).toBe('hit');
    expect(kept).toEqual(spliced);
    expect(Object.isFrozen((kept.data!.calls as { nodes: Row[] }).nodes[1])).toBe(true);
  });

  it("writes a spliced answer's JSON around its new items alone, splice after splice: the bytes of a full execution", async () => {
    const { state, outcomes, read, full } = setup();
    state.rows.push({ id: 'd', n: 1 });
    state.total = 4;
    state.rows[1]!.port = 'Zürich'; // not ASCII from the start: the items lie at byte offsets
    await read();
    const steps: Array<[string[], () => void]> = [
      [['a'], () => (state.rows[0]!.n = 123_456)], // the first item, longer
      [['d'], () => (state.rows[3]!.port = 'Göteborg ⚓')], // the last, no longer ASCII
      [['b', 'c'], () => ((state.rows[1]!.n = 2), (state.rows[2]!.n = 3))], // two at once
      [['a', 'd'], () => ((state.rows[0]!.n = 0), delete state.rows[3]!.port)], // shorter again
    ];
    const stringify = vi.spyOn(JSON, 'stringify');
    try {
      for (const [i, [touched, change]] of steps.entries()) {
        state.version = String(i + 2);
        state.touched = new Set(touched);
        change();
        stringify.mockClear();
        const answer = await read();
        // Each new item written twice (its edge, its node), nothing else of the lists again.
        const items = stringify.mock.calls.filter(
          ([value]) => value !== null && typeof value === 'object' && ('id' in value || 'node' in value),
        );
        expect(items).toHaveLength(2 * touched.length);
        expect(outcomes.at(-1)).toBe('spliced');
        // Sent as kept: its JSON was written at the splice.
        const sent = text(bodyOf({ data: answer.data }));
        expect(stringify.mock.calls.some(([value]) => value === answer.data)).toBe(false);
        expect(sent).toBe(`{"data":${full()}}`);
      }
    } finally {
      vi.restoreAllMocks();
    }
  });

  it('keeps the JSON JSON.stringify writes for a result with lists, whatever else its answer holds', async () => {
    const src: AnswerSource = {
      name: 'test',
      coordinates: new Set(),
      scopeOf: (p) => p.accountId,
      version: () => '1',
      changed: () => new Set(),
    };
    const data = {
      first: { a: [1, 2] },
      calls: {
        gone: undefined,
        nodes: [{ id: 'a', port: 'Göteborg' }, null],
        tags: ['only one'],
        edges: [undefined, { cursor: 'x', node: { id: 'b', n: 1e21 } }],
        total: 2,
      },
      empty: { nodes: [] },
      none: null,
      missing: undefined,
    };
    const execute = (notes?: ReadNotes): ExecutionResult => {
      notes?.list('calls', ['a', 'b'], 2);
      notes?.list('empty', [], 0);
      notes?.list('none', [], 0);
      return { data: data as unknown as Record<string, unknown> };
    };
    const cache = new AnswerCache(1024 * 1024);
    const kept = await cache.answer(src, services, 'acct', 'k', execute, true);
    expect(text(bodyOf({ data: kept.data }))).toBe(`{"data":${JSON.stringify(data)}}`);
  });

  const fallbacks: Array<[string, (state: ReturnType<typeof setup>['state']) => void]> = [
    ['the list reads other items', (state) => state.rows.reverse()],
    ['the list reads another total', (state) => (state.total = 4)],
    ['another part of the answer differs', (state) => (state.stamp = 't')],
    ['the re-execution fails', (state) => (state.fail = true)],
    ['the moves cannot be told', (state) => (state.touched = undefined)],
  ];
  it.each(fallbacks)('executes in full when %s', async (_what, change) => {
    const { state, outcomes, read, full } = setup();
    await read();
    state.version = '2';
    state.touched = new Set(['b']);
    state.rows[1]!.n = 2;
    change(state);
    const answer = await read();
    expect(outcomes.at(-1)).toBe('miss');
    expect(outcomes).not.toContain('spliced');
    if (!state.fail) expect(JSON.stringify(answer.data)).toBe(full());
  });

  it('executes in full when a touched key is no list item (noted outside a list)', async () => {
    const { state, outcomes, read } = setup();
    state.noted = ['vendor-1'];
    await read();
    state.version = '2';
    state.touched = new Set(['vendor-1']);
    await read();
    expect(outcomes).toEqual(['miss', 'miss']);
    expect(state.answered).toEqual([3, 3]);
  });
});

/** A body as the text it sends. */
const text = (body: string | Buffer): string => (typeof body === 'string' ? body : body.toString('utf8'));

describe('deepFreeze', () => {
  it('freezes every object and array within, whatever its prototype, and leaves the values as they were', () => {
    const shared = { name: 'Vendor' };
    const value = {
      calls: [
        {
          id: 'a',
          orders: [{ vendor: shared, details: Object.assign(Object.create(null), { quantity: 500 }) }],
        },
        { id: 'b', orders: [], vessel: null, eta: undefined },
      ],
      vendor: shared,
      total: 2,
    };
    const before = JSON.stringify(value);
    expect(deepFreeze(value)).toBe(value);
    const objects: object[] = [];
    const collect = (v: unknown): void => {
      if (v === null || typeof v !== 'object') return;
      objects.push(v);
      for (const item of Object.values(v)) collect(item);
    };
    collect(value);
    expect(objects).toHaveLength(10);
    expect(objects.filter((o) => !Object.isFrozen(o))).toEqual([]);
    expect(JSON.stringify(value)).toBe(before);
  });

  it('leaves what is already frozen as it is and passes primitives through', () => {
    const inner = { open: true };
    const done = Object.freeze({ inner });
    expect(deepFreeze({ done }).done.inner).toBe(inner);
    expect(Object.isFrozen(inner)).toBe(false);
    expect(deepFreeze(3)).toBe(3);
    expect(deepFreeze(null)).toBe(null);
  });
});

describe('bodyOf', () => {
  it('writes what JSON.stringify writes, envelopes around kept parts included, in UTF-8', () => {
    const kept = Object.freeze({
      calls: Object.freeze([Object.freeze({ id: '1', eta: null, port: 'Zürich ⚓ 🚢' })]),
    });
    const values: unknown[] = [
      null,
      undefined,
      'text',
      3,
      [1, 'two', null],
      { a: 1, skipped: undefined, fn: () => 1, nested: { b: [true] } },
      { gone: { toJSON: () => undefined }, sym: Symbol('s'), kept: 'yes', 'quote"d': kept },
      {},
      { only: undefined },
      { data: kept, extensions: { cost: { requested: 2, maximum: 10 } } },
      { errors: [{ message: 'm' }], data: kept },
      { data: kept, again: kept, name: 'São Paulo' },
      new Date('2026-11-25T00:00:00Z'),
      Object.assign(Object.create(null) as object, { x: kept }),
      // An envelope's own toJSON is what JSON.stringify writes, not its members.
      { data: kept, toJSON: () => ({ replaced: true }) },
      kept,
    ];
    for (const value of values) {
      const expected = JSON.stringify(value ?? null);
      expect(text(bodyOf(value))).toBe(expected);
      expect(text(bodyOf(value, '\n'))).toBe(expected + '\n');
      const body = bodyOf(value);
      if (typeof body !== 'string') expect(body.equals(Buffer.from(expected))).toBe(true);
    }
  });

  it('serializes and encodes a frozen value once and sends its bytes as they are; a fresh one every time', () => {
    let calls = 0;
    const counted = () => ({ toJSON: () => ++calls });
    const frozen = Object.freeze(counted());
    expect(text(bodyOf({ data: frozen }))).toBe('{"data":1}');
    expect(text(bodyOf({ data: frozen }))).toBe('{"data":1}');
    expect(calls).toBe(1);
    const fresh = counted();
    bodyOf({ data: fresh });
    bodyOf({ data: fresh });
    expect(calls).toBe(3);
    // A kept body on its own is the same bytes every time, not a copy.
    const kept = Object.freeze({ list: Object.freeze([1, 2]) });
    const once = bodyOf(kept);
    expect(Buffer.isBuffer(once)).toBe(true);
    expect(bodyOf(kept)).toBe(once);
    // An envelope embeds a small kept ASCII part as text, any other kept part as its bytes.
    const ascii = Object.freeze({ port: 'Rotterdam' });
    expect(bodyOf({ data: ascii, extensions: { cost: 1 } })).toBe(
      '{"data":{"port":"Rotterdam"},"extensions":{"cost":1}}',
    );
    const accented = Object.freeze({ port: 'Göteborg' });
    const envelope = bodyOf({ data: accented, extensions: { cost: 1 } });
    expect(Buffer.isBuffer(envelope)).toBe(true);
    expect(text(envelope)).toBe('{"data":{"port":"Göteborg"},"extensions":{"cost":1}}');
    // A large ASCII part (a dashboard) is embedded as its bytes too: copied, not encoded again.
    const dashboard = Object.freeze({
      names: Object.freeze(Array.from({ length: 300 }, (_, i) => `call ${i}`)),
    });
    const large = bodyOf({ data: dashboard, extensions: { cost: 2 } }, '\n');
    expect(Buffer.isBuffer(large)).toBe(true);
    expect(text(large)).toBe(JSON.stringify({ data: dashboard, extensions: { cost: 2 } }) + '\n');
  });
});
