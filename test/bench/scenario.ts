/** One HTTP load scenario for `npm run bench` (autocannon, loopback, fixed connections and duration). */
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
  /** Target share of the ceiling, reported as met or missed. */
  targetShare?: number;
  /** Target p99 in ms, reported as met or missed. */
  targetP99?: number;
  /** Requests cycled by each connection instead of the one above (a mix), built once at start. */
  mix?: (ctx: { url: string; keys: BenchKeys }) => Promise<BenchRequest[]>;
}
