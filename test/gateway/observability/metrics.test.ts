import { describe, expect, it } from 'vitest';
import { Metrics } from '../../../src/gateway/observability/metrics.js';
import { parsePrometheus, seriesValue } from '../../helpers/prometheus.js';

const DURATION = 'tidegate_request_duration_seconds';

function bucket(text: string, labels: Record<string, string>, le: string): number | undefined {
  const family = parsePrometheus(text).get(DURATION)!;
  return family.series.find(
    (s) =>
      s.name === `${DURATION}_bucket` &&
      s.labels.le === le &&
      Object.entries(labels).every(([k, v]) => s.labels[k] === v),
  )?.value;
}

describe('request metrics (counted per door and route, written on scrape)', () => {
  it('writes the duration histogram as cumulative buckets ending at +Inf with the sum and count', async () => {
    const metrics = new Metrics();
    const empty = parsePrometheus(await metrics.exposition()).get(DURATION);
    expect(empty).toMatchObject({ type: 'histogram', series: [] });

    metrics.request('rest', 'GET /v1/market', 200, 0.003, [], true);
    metrics.request('rest', 'GET /v1/market', 200, 0.001, [], true); // on a bound: counted in that bucket
    metrics.request('rest', 'GET /v1/market', 500, 20, [], true); // above every bound: only +Inf
    const text = await metrics.exposition();
    const market = { door: 'rest', route: 'GET /v1/market' };
    expect(bucket(text, market, '0.001')).toBe(1);
    expect(bucket(text, market, '0.0025')).toBe(1);
    expect(bucket(text, market, '0.005')).toBe(2);
    expect(bucket(text, market, '10')).toBe(2);
    expect(bucket(text, market, '+Inf')).toBe(3);
    const families = parsePrometheus(text);
    expect(seriesValue(families, DURATION, market)).toBe(3);
    const sum = families.get(DURATION)!.series.find((s) => s.name === `${DURATION}_sum`)!.value;
    expect(sum).toBeCloseTo(20.004, 9);
  });

  it('counts answers by status once: a second scrape adds only what came since', async () => {
    const metrics = new Metrics();
    const ok = { door: 'graphql-http', route: 'query Market', status: '200' };
    metrics.request('graphql-http', 'query Market', 200, 0.002, [], true);
    metrics.request('graphql-http', 'query Market', 200, 0.002, [], true);
    metrics.request('graphql-http', 'query Market', 400, 0.002, ['BAD_USER_INPUT'], true);
    let families = parsePrometheus(await metrics.exposition());
    expect(seriesValue(families, 'tidegate_requests_total', ok)).toBe(2);
    expect(seriesValue(families, 'tidegate_requests_total', { ...ok, status: '400' })).toBe(1);
    expect(seriesValue(families, 'tidegate_errors_total', { code: 'BAD_USER_INPUT' })).toBe(1);

    families = parsePrometheus(await metrics.exposition());
    expect(seriesValue(families, 'tidegate_requests_total', ok)).toBe(2);
    metrics.request('graphql-http', 'query Market', 200, 0.002, [], true);
    families = parsePrometheus(await metrics.exposition());
    expect(seriesValue(families, 'tidegate_requests_total', ok)).toBe(3);
    expect(seriesValue(families, DURATION, { door: 'graphql-http', route: 'query Market' })).toBe(4);
  });

  it('escapes label values in the histogram lines as the format wants', async () => {
    const metrics = new Metrics();
    const route = 'query Odd "name" \\ with\na newline';
    metrics.request('rest', route, 200, 0.01, [], true);
    const families = parsePrometheus(await metrics.exposition());
    expect(seriesValue(families, DURATION, { door: 'rest', route })).toBe(1);
    expect(seriesValue(families, 'tidegate_requests_total', { door: 'rest', route, status: '200' })).toBe(1);
  });
});
