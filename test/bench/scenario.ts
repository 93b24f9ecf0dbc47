/** One HTTP load scenario for `npm run bench` (autocannon, loopback, fixed connections and duration). */
export interface BenchScenario {
  /** Shown in the results table, e.g. `GraphQL dashboard (50 port calls)`. */
  name: string;
  method: 'GET' | 'POST';
  path: string;
  /** Given the demo API keys by plan, returns the request headers. */
  headers?: (
    keys: Record<'OBSERVER' | 'ANALYST' | 'PROFESSIONAL' | 'INSTITUTIONAL', string>,
  ) => Record<string, string>;
  body?: string;
  /** Name of another scenario this one is compared with (ratio of req/s), e.g. the bare route. */
  baseline?: string;
}
