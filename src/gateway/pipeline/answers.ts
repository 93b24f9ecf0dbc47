import {
  Kind,
  TypeInfo,
  visit,
  visitWithTypeInfo,
  type DocumentNode,
  type ExecutionResult,
  type GraphQLSchema,
  type OperationDefinitionNode,
  type ValueNode,
} from 'graphql';
import { andThen, isPromise, type MaybePromise } from '../../kernel/maybe-async.js';
import type { Principal } from '../../kernel/principal.js';
import { Lru } from '../../kernel/lru.js';
import type { AppServices } from '../schema/context.js';

/*
 * Answers kept between requests, inside the one pipeline (operation.ts): a query whose every field
 * reads only one source's data executes once per version of that data, caller account and
 * variables; later requests still pass the access check and admission, and are then answered
 * from the kept result, which the pipeline formats as it formats a fresh one. So the answer is the
 * same by every door and however often the operation was seen, and only the execution is saved.
 *
 * Invalidation: a kept result serves only the version of its source it was executed at, and the
 * version is checked on every request. The version moves in the writing transaction (for port
 * operations, by triggers: every writer moves it, the CLI and another gateway process included).
 * The versions are kept in memory (src/db/versions.ts), from the database's notices on PostgreSQL
 * and by a poll every few milliseconds on SQLite: a client reads its own write on its next request
 * (a mutation marks what its caller reads, see `written`), and a change made elsewhere is served
 * once its notice arrives or at the next poll. A result executed while a write committed may hold
 * data newer than its version: never older.
 *
 * What may be kept is declared by the source as schema coordinates (`PortCall.eta`): fields whose
 * value is a function of the source's data, the caller's account and the arguments only. A field
 * that reads the clock, an outside service or anything else of the caller (a signed URL, a
 * prediction, a report window ending "now") is left out, and any operation selecting it executes
 * every time. Mutations and subscriptions always execute.
 *
 * Carried over a version move: a source that can tell what a change touched (`recorded`,
 * `changed`) has its resolvers note the keys of what an execution read (`context.recorded`: a
 * list's port calls, in the list's order). When the version has moved, the source is asked which
 * keys the moves since the kept version touched. If none the result read, the kept result is the
 * answer at the new version too and serves it without executing (outcome `carried`). If some of a
 * list's items were touched, the operation executes again with its lists serving only those items
 * (`ReadNotes.only`), and their new answers replace the old ones in a copy of the kept result
 * (outcome `spliced`): the lists must have read the same items in the same order and the same
 * total as the kept execution, and every other part of the answer must come out the same, or the
 * operation executes in full. The rule is the source's, checked against the database's own log of
 * what each move changed, so it holds across processes as the version does.
 */

/** Data whose answers may be kept: what it covers, and how its current version is read. */
export interface AnswerSource {
  /** Names the source in metrics (`port-ops`). */
  readonly name: string;
  /** `Type.field` coordinates whose value depends only on this data, the caller's scope and the arguments. */
  readonly coordinates: ReadonlySet<string>;
  /**
   * What of the data the caller reads (its account), as a key; undefined when its answers are
   * not to be kept (a caller who reads across accounts).
   */
  scopeOf(principal: Principal): string | undefined;
  /**
   * The version of what `scope` reads, as an execution now would; a different string after any
   * change. Returned as it is when it is at hand (a snapshot in memory, an idle SQLite connection):
   * a kept answer is then served without a promise.
   */
  version(services: AppServices, scope: string): MaybePromise<string>;
  /**
   * A mutation by `principal` has ended in this process: what it wrote must be served to it on its
   * next request, whatever delay the version's other paths have.
   */
  written?(services: AppServices, principal: Principal): void;
  /**
   * Arguments (`Query.scores(profileId:)`) that bring in data the version does not cover: an answer
   * is kept only when the argument is absent or null (a variable feeding it is checked per request).
   */
  readonly keptOnlyWithout?: ReadonlySet<string>;
  /**
   * Coordinates whose resolvers note in `context.recorded` the key of every row they read that
   * the version covers, and of nothing else (a list at the operation's top level also notes its
   * items' keys in order, `ReadNotes.list`): an operation selecting only these has its kept answer
   * carried over version moves that touched none of its keys, and the touched items of its lists
   * executed again alone.
   */
  readonly recorded?: ReadonlySet<string>;
  /**
   * The keys whose data the moves of `scope`'s data after version `from` up to `to` (a later
   * version of the same data) touched; undefined whenever that cannot be told for sure, or a move
   * may have touched what no key names (which rows a list holds).
   */
  changed?(
    services: AppServices,
    scope: string,
    from: string,
    to: string,
  ): MaybePromise<ReadonlySet<string> | undefined>;
}

/** A query whose results may be kept: its source, and the variables that must be unset for that. */
export interface Keepable {
  readonly source: AnswerSource;
  readonly unlessSet: readonly string[];
  /** Every field it selects notes what it reads (`AnswerSource.recorded`). */
  readonly recorded: boolean;
}

/** Whether this request's variables let a keepable operation's result be kept. */
export function keptWith(keepable: Keepable, variables: Record<string, unknown> | undefined): boolean {
  return keepable.unlessSet.every((name) => variables?.[name] === undefined || variables[name] === null);
}

/** The one source all of an operation's fields read, if there is one and the operation is a query. */
export function answerSourceOf(
  schema: GraphQLSchema,
  document: DocumentNode,
  operation: OperationDefinitionNode,
  sources: readonly AnswerSource[],
): Keepable | undefined {
  if (operation.operation !== 'query' || sources.length === 0) return undefined;
  if (document.definitions.some((d) => d.kind === Kind.OPERATION_DEFINITION && d.operation !== 'query'))
    return undefined;
  // Every coordinate the document selects (all its operations and fragments: a conservative
  // superset), and every argument given with its value.
  const selected = new Set<string>();
  const given: Array<{ argument: string; value: ValueNode }> = [];
  const typeInfo = new TypeInfo(schema);
  visit(
    document,
    visitWithTypeInfo(typeInfo, {
      Field(node) {
        if (node.name.value === '__typename') return;
        const coordinate = `${typeInfo.getParentType()?.name ?? '?'}.${node.name.value}`;
        selected.add(coordinate);
        for (const arg of node.arguments ?? [])
          given.push({ argument: `${coordinate}(${arg.name.value}:)`, value: arg.value });
      },
    }),
  );
  const defaults = new Map(
    (operation.variableDefinitions ?? []).map((d) => [d.variable.name.value, d.defaultValue]),
  );
  for (const source of sources) {
    if (![...selected].every((c) => source.coordinates.has(c))) continue;
    const unlessSet: string[] = [];
    const keepable = given.every(({ argument, value }) => {
      if (!source.keptOnlyWithout?.has(argument) || value.kind === Kind.NULL) return true;
      if (value.kind !== Kind.VARIABLE) return false;
      const fallback = defaults.get(value.name.value);
      if (fallback && fallback.kind !== Kind.NULL) return false;
      unlessSet.push(value.name.value);
      return true;
    });
    const recorded = source.recorded;
    return keepable
      ? { source, unlessSet, recorded: !!recorded && [...selected].every((c) => recorded.has(c)) }
      : undefined;
  }
  return undefined;
}

export type AnswerOutcome = 'hit' | 'carried' | 'spliced' | 'miss' | 'joined';

/** A list at the top of an operation as an execution read it: its items' keys in order, and its total. */
interface ListRead {
  readonly keys: readonly string[];
  readonly total: number;
}

/**
 * What an execution read, noted by the resolvers of its source's `recorded` coordinates (the
 * request's `context.recorded`): the keys of the rows, and per list at the operation's top level
 * (by its response key) the keys of its items in order and its total.
 */
export class ReadNotes {
  readonly keys = new Set<string>();
  readonly lists = new Map<string, ListRead>();

  /** `only`: the execution's lists answer these keys' items and leave the others out. */
  constructor(readonly only?: ReadonlySet<string>) {}

  /** A list at the operation's top level (`responseKey`) read these items, by key in order, of `total`. */
  list(responseKey: string, keys: readonly string[], total: number): void {
    for (const key of keys) this.keys.add(key);
    this.lists.set(responseKey, { keys, total });
  }

  /** Whether a list answers the item of `key`. */
  answers(key: string): boolean {
    return this.only === undefined || this.only.has(key);
  }
}

/** Executes the operation, its resolvers noting what they read into `notes` when given. */
export type Execute = (notes?: ReadNotes) => MaybePromise<ExecutionResult>;

interface Kept {
  /** The version it answers for: the one it executed at, or a later one it was carried to. */
  version: string;
  result: ExecutionResult;
  /** What its execution read, when its source can carry it over a move. */
  notes?: ReadNotes;
  /** Where its lists' items lie in its JSON, when it has lists (`writeJson`). */
  spans?: Spans;
}

interface Executed {
  result: ExecutionResult;
  notes?: ReadNotes;
  /** The result's JSON, when it was composed rather than to be written (a splice's). */
  json?: WrittenJson;
}

/**
 * The kept results, bounded by their size as JSON (ANSWER_CACHE_MB), least recently used dropped
 * first (nearly, see src/kernel/lru.ts). Concurrent misses for one key and version share one
 * execution.
 */
export class AnswerCache {
  private readonly kept: Lru<string, Kept>;
  /** Executions in flight: each is deleted when it settles, so this is no cache. */
  private readonly running = new Map<string, Promise<ExecutionResult>>();

  constructor(
    private readonly maxBytes: number,
    private readonly observe: (source: string, outcome: AnswerOutcome) => void = () => undefined,
  ) {
    this.kept = new Lru<string, Kept>({ maxBytes });
  }

  get size(): { entries: number; bytes: number } {
    return { entries: this.kept.size, bytes: this.kept.bytes };
  }

  /**
   * The result for `key` at the source's current version: kept, carried over, spliced, joined or
   * executed now. `noted`: the operation selects only its source's `recorded` coordinates, and
   * `execute` is given the notes its resolvers fill (kept with the result). If the version cannot
   * be read (the database is down) the operation executes as if nothing were kept, and answers
   * whatever that execution meets. Synchronous when the version is at hand and the result is kept.
   */
  answer(
    source: AnswerSource,
    services: AppServices,
    scope: string,
    key: string,
    execute: Execute,
    noted = false,
  ): MaybePromise<ExecutionResult> {
    let version: MaybePromise<string>;
    try {
      version = source.version(services, scope);
    } catch {
      return execute();
    }
    const at = (v: string) => this.at(source, services, scope, key, v, execute, noted);
    return isPromise(version) ? version.then(at, () => execute()) : at(version);
  }

  /** The result for `key` at `version`: the kept one (as it is, carried over or spliced), a running execution's, or a new one. */
  private at(
    source: AnswerSource,
    services: AppServices,
    scope: string,
    key: string,
    version: string,
    execute: Execute,
    noted: boolean,
  ): MaybePromise<ExecutionResult> {
    const kept = this.kept.get(key);
    if (kept && kept.version === version) {
      this.observe(source.name, 'hit');
      return kept.result;
    }
    const run = () => this.run(source, key, version, () => this.executed(source, execute, noted));
    const notes = kept?.notes;
    if (!kept || !notes || !source.changed) return run();
    let changed: MaybePromise<ReadonlySet<string> | undefined>;
    try {
      changed = source.changed(services, scope, kept.version, version);
    } catch {
      return run();
    }
    const next = (touched: ReadonlySet<string> | undefined) => {
      if (!touched) return run();
      const read = new Set([...touched].filter((k) => notes.keys.has(k)));
      if (read.size > 0) {
        // Only a list's items can be executed again alone: a touched row read elsewhere executes all.
        const lists = [...notes.lists.values()];
        if (![...read].every((k) => lists.some((list) => list.keys.includes(k)))) return run();
        return this.run(source, key, version, () => this.spliced(source, kept, read, execute));
      }
      // Another request may have kept a newer result meanwhile: that one stays.
      if (this.kept.peek(key) === kept) kept.version = version;
      this.observe(source.name, 'carried');
      return kept.result;
    };
    return isPromise(changed) ? changed.then(next, run) : next(changed);
  }

  /** A running execution for `key` at `version` to join, or a new one, kept when it has no error. */
  private run(
    source: AnswerSource,
    key: string,
    version: string,
    execute: () => MaybePromise<Executed>,
  ): Promise<ExecutionResult> {
    const runKey = `${version}\u0000${key}`;
    const running = this.running.get(runKey);
    if (running) {
      this.observe(source.name, 'joined');
      return running;
    }
    const execution = Promise.resolve(execute()).then(({ result, notes, json }) => {
      if (!result.errors?.length) this.keep(key, version, result, notes, json);
      return result;
    });
    this.running.set(runKey, execution);
    const forget = () => this.running.delete(runKey);
    execution.then(forget, forget);
    return execution;
  }

  /** The operation executed in full. */
  private executed(source: AnswerSource, execute: Execute, noted: boolean): MaybePromise<Executed> {
    this.observe(source.name, 'miss');
    const notes = noted ? new ReadNotes() : undefined;
    return andThen(execute(notes), (result) => ({ result, notes }));
  }

  /**
   * The kept result with the items of `touched` executed again: their lists' other items, and the
   * rest of the answer, as kept. Executed in full when the lists read other items, another total,
   * or anything else came out different.
   */
  private spliced(
    source: AnswerSource,
    kept: Kept,
    touched: ReadonlySet<string>,
    execute: Execute,
  ): MaybePromise<Executed> {
    const notes = new ReadNotes(touched);
    return andThen(execute(notes), (result) => {
      const spliced = splice(kept, result, notes);
      if (spliced === undefined) return this.executed(source, execute, true);
      this.observe(source.name, 'spliced');
      const { data, replaced } = spliced;
      // The kept JSON with the new items in their places, rather than the whole written again.
      const { spans, result: before } = kept;
      const keptJson = spans && before.data ? keptJsonOf(before.data) : undefined;
      const json = spans && keptJson !== undefined ? splicedJson(keptJson, spans, replaced) : undefined;
      return json ? { result: { data }, notes: kept.notes, json } : { result: { data }, notes: kept.notes };
    });
  }

  private keep(
    key: string,
    version: string,
    result: ExecutionResult,
    notes?: ReadNotes,
    written = writeJson(result.data, notes?.lists),
  ): void {
    const json = written?.json;
    const bytes = written?.bytes ?? 0;
    // Larger than the whole bound: not kept (the cache would refuse it after the freeze below).
    if (bytes > this.maxBytes) return;
    // Frozen: every request shares this object, and nothing downstream may change it. A spliced
    // result's kept parts are frozen already, and the walk passes them by.
    const data = deepFreeze(result.data);
    // Its JSON is already written: the first request it serves need not write it again.
    if (data && json !== undefined)
      if (typeof json === 'string') keepJson(data, json, bytes);
      else keepBytes(data, json);
    const kept: Kept = { version, result: { data } };
    if (notes) kept.notes = notes;
    if (written?.spans) kept.spans = written.spans;
    this.kept.set(key, kept, bytes);
  }
}

type Json = Record<string, unknown>;

const isObject = (value: unknown): value is Json =>
  value !== null && typeof value === 'object' && !Array.isArray(value);

const sameJson = (a: unknown, b: unknown): boolean => JSON.stringify(a) === JSON.stringify(b);

/**
 * The kept data with the items of a re-execution that answered some items of its lists only
 * (`notes.only`) in their places, or undefined when that would not be the data a full execution
 * answers: the re-execution failed, a list read other items or another total, or any part that is
 * no list's items (a total, a page's cursors) came out different.
 */
function splice(
  kept: Kept,
  fresh: ExecutionResult,
  notes: ReadNotes,
): { data: Json; replaced: Replaced[] } | undefined {
  const before = kept.result.data;
  const after = fresh.data;
  const lists = kept.notes?.lists;
  const only = notes.only;
  if (fresh.errors?.length || !isObject(before) || !isObject(after) || !lists || !only) return undefined;
  if (notes.lists.size !== lists.size || Object.keys(after).length !== Object.keys(before).length)
    return undefined;
  const data: Json = {};
  const replaced: Replaced[] = [];
  for (const name of Object.keys(before)) {
    const was = before[name];
    const now = after[name];
    const list = lists.get(name);
    if (!list) {
      if (!(name in after) || !sameJson(was, now)) return undefined;
      data[name] = was;
      continue;
    }
    const read = notes.lists.get(name);
    if (!read || read.total !== list.total || read.keys.length !== list.keys.length) return undefined;
    const places: number[] = [];
    for (let i = 0; i < list.keys.length; i++) {
      if (read.keys[i] !== list.keys[i]) return undefined;
      if (only.has(list.keys[i]!)) places.push(i);
    }
    const items = spliceItems(was, now, list.keys.length, places, (field, place, item) =>
      replaced.push({ list: name, field, place, item }),
    );
    if (items === undefined) return undefined;
    data[name] = items;
  }
  return { data, replaced };
}

/**
 * A list's answer (a connection: arrays of its items such as `edges` and `nodes`, beside parts such
 * as `totalCount`) with the re-executed items at `places`; undefined when it cannot be told apart.
 */
function spliceItems(
  was: unknown,
  now: unknown,
  length: number,
  places: number[],
  replace: (field: string, place: number, item: unknown) => void,
): Json | undefined {
  if (!isObject(was) || !isObject(now) || Object.keys(now).length !== Object.keys(was).length)
    return undefined;
  const spliced: Json = {};
  for (const name of Object.keys(was)) {
    const old = was[name];
    const fresh = now[name];
    if (!(name in now)) return undefined;
    if (Array.isArray(old)) {
      if (!Array.isArray(fresh) || old.length !== length || fresh.length !== places.length) return undefined;
      const items = old.slice();
      places.forEach((place, i) => {
        items[place] = fresh[i];
        replace(name, place, fresh[i]);
      });
      spliced[name] = items;
    } else {
      if (!sameJson(old, fresh)) return undefined;
      spliced[name] = old;
    }
  }
  return spliced;
}

/** An item a splice put in place of a kept one: in list `list`, array member `field`, at `place`. */
interface Replaced {
  list: string;
  field: string;
  place: number;
  item: unknown;
}

/**
 * Where the items of a kept result's lists lie in its JSON: per list (response key), per array
 * member of the list's answer with one element per item (`edges`, `nodes`), the byte offsets at
 * which each item's JSON starts and ends, two per item.
 */
type Spans = Map<string, Map<string, number[]>>;

/** A result's JSON as text or bytes, its length in bytes, and where its lists' items lie. */
interface WrittenJson {
  json: string | Buffer;
  bytes: number;
  spans?: Spans;
}

/**
 * `JSON.stringify(data)`, and when `lists` names lists at its top level, where their items lie:
 * each such list's answer is written member by member in JSON.stringify's order and form, each
 * item of an array with one element per item on its own, so that a splice can put new items in
 * the places of old ones without writing the rest again (`splicedJson`).
 */
function writeJson(data: unknown, lists: ReadonlyMap<string, ListRead> | undefined): WrittenJson | undefined {
  if (!lists?.size || !isPlainJson(data)) {
    const text = JSON.stringify(data) as string | undefined;
    return text === undefined ? undefined : { json: text, bytes: Buffer.byteLength(text) };
  }
  // Pieces joined once at the end; offsets counted in characters, and in bytes only if it is not ASCII.
  const pieces: string[] = [];
  let length = 0;
  const add = (piece: string) => {
    pieces.push(piece);
    length += piece.length;
  };
  const spans: Spans = new Map();
  // A member as JSON.stringify writes it, or nothing for what it leaves out (undefined).
  const member = (first: boolean, key: string, json: string | undefined): boolean => {
    if (json === undefined) return first;
    add((first ? '' : ',') + quotedKey(key) + ':' + json);
    return false;
  };
  let first = true;
  add('{');
  for (const name in data) {
    if (!Object.hasOwn(data, name)) continue;
    const value = data[name];
    const list = lists.get(name);
    if (!list || !isPlainJson(value)) {
      first = member(first, name, JSON.stringify(value) as string | undefined);
      continue;
    }
    add((first ? '' : ',') + quotedKey(name) + ':{');
    first = false;
    const fields = new Map<string, number[]>();
    let firstField = true;
    for (const field in value) {
      if (!Object.hasOwn(value, field)) continue;
      const items = value[field];
      if (!Array.isArray(items) || items.length !== list.keys.length) {
        firstField = member(firstField, field, JSON.stringify(items) as string | undefined);
        continue;
      }
      add((firstField ? '' : ',') + quotedKey(field) + ':[');
      firstField = false;
      const offsets: number[] = [];
      for (let i = 0; i < items.length; i++) {
        if (i > 0) add(',');
        offsets.push(length);
        // An array writes what JSON.stringify leaves out as null.
        add((JSON.stringify(items[i]) as string | undefined) ?? 'null');
        offsets.push(length);
      }
      add(']');
      fields.set(field, offsets);
    }
    add('}');
    spans.set(name, fields);
  }
  add('}');
  const text = pieces.join('');
  const bytes = Buffer.byteLength(text);
  if (bytes !== text.length) inBytes(text, spans);
  return { json: text, bytes, spans };
}

/** Turns `spans`' offsets in characters of `text` into offsets in its UTF-8 bytes, in one pass. */
function inBytes(text: string, spans: Spans): void {
  const offsets = [...spans.values()].flatMap((fields) => [...fields.values()]);
  const all = [...new Set(offsets.flat())].sort((a, b) => a - b);
  const bytesAt = new Map<number, number>();
  let at = 0;
  let bytes = 0;
  for (const offset of all) {
    bytes += Buffer.byteLength(text.slice(at, offset));
    at = offset;
    bytesAt.set(offset, bytes);
  }
  for (const list of offsets) for (let i = 0; i < list.length; i++) list[i] = bytesAt.get(list[i]!)!;
}

/** A plain object whose JSON is its members' (no `toJSON`, no class). */
function isPlainJson(value: unknown): value is Json {
  if (!isObject(value)) return false;
  const proto = Object.getPrototypeOf(value) as unknown;
  return (proto === Object.prototype || proto === null) && !('toJSON' in value);
}

/**
 * The JSON of a spliced result: the kept result's (`json`, whose items lie at `spans`) with each
 * replaced item's JSON in place of the old one's, and where the items lie in it. Bytes, copied
 * once around the new items.
 */
function splicedJson(
  json: string | Buffer,
  spans: Spans,
  replaced: readonly Replaced[],
): WrittenJson | undefined {
  const cuts: Array<{ start: number; end: number; fresh: Buffer; delta: number }> = [];
  for (const { list, field, place, item } of replaced) {
    const offsets = spans.get(list)?.get(field);
    const start = offsets?.[2 * place];
    const end = offsets?.[2 * place + 1];
    // An item whose place was not noted: the result's JSON is written whole instead.
    if (start === undefined || end === undefined) return undefined;
    const fresh = Buffer.from((JSON.stringify(item) as string | undefined) ?? 'null');
    cuts.push({ start, end, fresh, delta: fresh.length - (end - start) });
  }
  cuts.sort((a, b) => a.start - b.start);
  const source = typeof json === 'string' ? Buffer.from(json) : json;
  const parts: Buffer[] = [];
  let at = 0;
  for (const cut of cuts) {
    parts.push(source.subarray(at, cut.start), cut.fresh);
    at = cut.end;
  }
  parts.push(source.subarray(at));
  // An offset moves by the changes in length of the items that end at or before it.
  const moved = (offset: number) => {
    let shifted = offset;
    for (const cut of cuts) if (cut.end <= offset) shifted += cut.delta;
    return shifted;
  };
  const next: Spans = new Map();
  for (const [list, fields] of spans) {
    const within = new Map<string, number[]>();
    for (const [field, offsets] of fields) within.set(field, offsets.map(moved));
    next.set(list, within);
  }
  const bytes = Buffer.concat(parts);
  return { json: bytes, bytes: bytes.length, spans: next };
}

/**
 * Freezes `value` and everything in it: a kept result, and what is derived from one once for all.
 * Walked by index and by `for…in` rather than `Object.values`, which makes an array per object: a
 * kept 50-call dashboard has about 700 objects, and the walk took half the time (about 100 against
 * 200–400 µs in a microbenchmark of such a result).
 */
export function deepFreeze<T>(value: T): T {
  if (value === null || typeof value !== 'object' || Object.isFrozen(value)) return value;
  freezeWithin(value);
  return value;
}

function freezeWithin(value: object): void {
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const item: unknown = value[i];
      if (item !== null && typeof item === 'object' && !Object.isFrozen(item)) freezeWithin(item);
    }
  } else {
    for (const key in value) {
      if (!Object.hasOwn(value, key)) continue;
      const item: unknown = (value as Record<string, unknown>)[key];
      if (item !== null && typeof item === 'object' && !Object.isFrozen(item)) freezeWithin(item);
    }
  }
  Object.freeze(value);
}

/*
 * The JSON of frozen values, written once: a frozen value cannot change, and its JSON goes with it.
 * Kept as text while it is ASCII and not needed as bytes, as UTF-8 bytes once it is embedded in an
 * envelope from EMBEDDED_TEXT_BYTES on, sent as a whole body (a REST body derived from a kept result),
 * or not ASCII.
 */
const keptText = new WeakMap<object, string>();
const keptBytes = new WeakMap<object, Buffer>();

/**
 * Below this many bytes a kept part's ASCII JSON is embedded in an envelope as text; from it on as
 * bytes. Concatenated text is flattened and encoded again per request, which for large parts costs
 * more than copying their bytes once (a 30 KB part: 19 µs against 6 in a microbenchmark, and a bare
 * server answering a 30 KB envelope: 56–61 µs of CPU per request as text against 52–53 as bytes);
 * under about 2 KB both cost the same.
 */
const EMBEDDED_TEXT_BYTES = 2048;

/**
 * Keeps `text`, the JSON of frozen `value` (`bytes` long in UTF-8): as text when ASCII (encoded only
 * if an envelope or a whole body needs its bytes: a REST route sends a body derived from it instead),
 * as bytes otherwise.
 */
function keepJson(value: object, text: string, bytes = Buffer.byteLength(text)): string | Buffer {
  if (bytes === text.length) {
    keptText.set(value, text);
    return text;
  }
  return keepBytes(value, Buffer.from(text));
}

/** Keeps the bytes of frozen `value` in place of its text. */
function keepBytes(value: object, bytes: Buffer): Buffer {
  keptBytes.set(value, bytes);
  keptText.delete(value);
  return bytes;
}

/** The JSON kept for frozen `value`, text or bytes, if any. */
function keptJsonOf(value: object): string | Buffer | undefined {
  return keptBytes.get(value) ?? keptText.get(value);
}

/** What an envelope embeds of frozen `value`: its ASCII text when small, or its bytes. */
function embedded(value: object): string | Buffer | undefined {
  let kept = keptJsonOf(value);
  if (kept === undefined) {
    const text = JSON.stringify(value) as string | undefined;
    if (text === undefined) return undefined;
    kept = keepJson(value, text);
  }
  return typeof kept === 'string' && kept.length >= EMBEDDED_TEXT_BYTES
    ? keepBytes(value, Buffer.from(kept))
    : kept;
}

/** Frozen `value` as a whole body: its bytes. */
function frozenBytes(value: object): Buffer | undefined {
  const bytes = keptBytes.get(value);
  if (bytes !== undefined) return bytes;
  const text = keptText.get(value) ?? (JSON.stringify(value) as string | undefined);
  return text === undefined ? undefined : keepBytes(value, Buffer.from(text));
}

/**
 * The body `JSON.stringify(value ?? null) + suffix`, as text or as its UTF-8 bytes. A frozen value
 * (a kept result, or a body derived from one once for all the requests it serves) is serialized once,
 * and sent whole as bytes encoded once: a kept 40 KB answer is then neither measured nor encoded
 * again per request (in a bare Fastify route a 40 KB body cost 37–40 µs of CPU as ASCII text against
 * 21–33 as bytes, 58–66 against 21–26 with non-ASCII letters in it). A plain envelope around kept
 * parts (`{ data, extensions }`) is written member by member, in the same order and form as
 * JSON.stringify writes it, so only the parts that differ per request (the cost budget) are
 * serialized each time; a small kept part is embedded as its text when that is ASCII, and otherwise
 * its bytes are copied into the body (a 40 KB envelope: 68–77 µs as text against 51–57 as bytes with
 * non-ASCII letters; `EMBEDDED_TEXT_BYTES`). Anything else is text.
 */
export function bodyOf(value: unknown, suffix = ''): string | Buffer {
  if (value === null || value === undefined || typeof value !== 'object')
    return JSON.stringify(value ?? null) + suffix;
  if (Object.isFrozen(value)) {
    const bytes = frozenBytes(value);
    if (bytes === undefined) return String(JSON.stringify(value)) + suffix;
    return suffix === '' ? bytes : Buffer.concat([bytes, Buffer.from(suffix)]);
  }
  if (!isPlainJson(value)) return JSON.stringify(value) + suffix;
  const parts: Buffer[] = [];
  let text = '';
  let members = 0;
  // for-in makes no array of keys; own members only, as JSON.stringify writes them.
  for (const key in value) {
    if (!Object.hasOwn(value, key)) continue;
    const member = (value as Record<string, unknown>)[key];
    const json =
      member !== null && typeof member === 'object' && Object.isFrozen(member)
        ? embedded(member)
        : (JSON.stringify(member) as string | undefined);
    // What JSON.stringify leaves out: undefined, functions, symbols (and a toJSON giving those).
    if (json === undefined) continue;
    text += (members++ === 0 ? '{' : ',') + quotedKey(key) + ':';
    if (typeof json === 'string') text += json;
    else {
      parts.push(Buffer.from(text), json);
      text = '';
    }
  }
  text += (members === 0 ? '{}' : '}') + suffix;
  if (parts.length === 0) return text;
  parts.push(Buffer.from(text));
  return Buffer.concat(parts);
}

const quotedKeys = new Lru<string, string>({ maxEntries: 64 });

/** An envelope's member name as JSON (`"data"`): few names, written once each. */
function quotedKey(key: string): string {
  let quoted = quotedKeys.get(key);
  if (quoted === undefined) {
    quoted = JSON.stringify(key);
    quotedKeys.set(key, quoted);
  }
  return quoted;
}
