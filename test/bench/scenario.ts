/** One HTTP load scenario for `npm run bench` (autocannon, loopback, fixed connections and duration). */
import { parseFlag } from '../../src/config.js';
import type { CapturedAnswer } from './ceiling.js';

/**
 * A yes-or-no setting of the bench, read by the service's own rule (`parseFlag`: true/false, 1/0,
 * yes/no, on/off), false when unset; any other value stops the bench with an error naming it.
 */
export function benchFlag(name: string): boolean {
  const text = process.env[name];
  const value = parseFlag(text);
  if (value === 'invalid') throw new Error(`${name} must be true or false (got '${text}')`);
  return value ?? false;
}

export type Dialect = 'sqlite' | 'postgresql';
/** A target that holds on both dialects, or one per dialect. */
export type PerDialect = number | Record<Dialect, number>;

/**
 * A sequence of requests shared by every connection (each takes the next one), and the same
 * sequence for the ceiling, which answers each request with the bytes of one captured answer.
 */
export interface BenchSequence {
  /** Answers the ceiling serves; the ceiling's sequence names them by path. */
  answers: CapturedAnswer[];
  gateway: () => BenchRequest;
  ceiling: (pathOf: (answer: number) => string) => () => BenchRequest;
}

export interface SequenceContext {
  url: string;
  keys: BenchKeys;
  /** The gateway's database (a SQLite file or a postgres:// URL), for fixtures written before the load. */
  databaseUrl: string;
}

export type BenchKeys = Record<'OBSERVER' | 'ANALYST' | 'PROFESSIONAL' | 'INSTITUTIONAL', string>;

export interface BenchRequest {
  method: 'GET' | 'POST';
  path: string;
  headers?: Record<string, string>;
  body?: string;
}

export interface BenchScenario {
  /** Shown in the results table, e.g. `GraphQL dashboard (50 port calls)`. */
  name: string;
  method: 'GET' | 'POST';
  path: string;
  /** Given the demo API keys by plan, returns the request headers. */
  headers?: (keys: BenchKeys) => Record<string, string>;
  body?: string;
  /** Which process answers: the gateway (default) or the plain Apollo Server anchor. */
  target?: 'gateway' | 'apollo';
  /**
   * Paired in every round with a bare node:http server answering the same request with the bytes
   * the gateway gave at start (test/bench/ceiling.ts): the row reports its share of that ceiling.
   */
  ceiling?: boolean;
  /** Measured against the ceiling of another scenario (one that answers the same bytes). */
  ceilingOf?: string;
  /** A second per-round ratio to report: this scenario's req/s ÷ that scenario's. */
  compareWith?: string;
  /** Target share of the ceiling (the wire one for a warm read), reported as met or missed. */
  targetShare?: PerDialect;
  /** Target p99 in ms, reported as met or missed. */
  targetP99?: PerDialect;
  /**
   * A `ceiling` read is also measured cold (a second gateway on the same database with
   * `ANSWER_CACHE_MB=0`) against the json ceiling, unless this is false (the floors: no work to keep).
   */
  cold?: boolean;
  /** Targets of the cold row. */
  coldTarget?: { share: PerDialect; p99?: PerDialect };
  /** A shared sequence of requests (with its own ceiling replaying it), built once at start. */
  sequence?: (ctx: SequenceContext) => Promise<BenchSequence>;
  /** Requests cycled by each connection instead of the one above (a mix), built once at start. */
  mix?: (ctx: { url: string; keys: BenchKeys }) => Promise<BenchRequest[]>;
}
