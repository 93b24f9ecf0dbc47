import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  commitEvents,
  eventually,
  startReceiver,
  tierChange,
  wsSession,
  type Receiver,
} from '../../events/helpers.js';
import { parsePrometheus, seriesValue, type Family } from '../../helpers/prometheus.js';
import { gql, rest, startTestServer, type TestServer } from '../../helpers/server.js';
import { waitFor } from '../../helpers/wait.js';

type Families = Map<string, Family>;

async function scrape(url: string, token?: string): Promise<Families> {
  const res = await fetch(`${url}/metrics`, token ? { headers: { authorization: `Bearer ${token}` } } : {});
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
  return parsePrometheus(await res.text());
}

const value = seriesValue;

describe('Prometheus metrics at /metrics', () => {
  let server: TestServer;
  let receiver: Receiver;
  beforeAll(async () => {
    server = await startTestServer({ env: { LIMIT_ANALYST_PER_MINUTE: '2' } });
    receiver = await startReceiver();
  });
  afterAll(async () => {
    await server?.close();
    await receiver?.close();
  });

  it('parses as Prometheus text with process metrics, and counts requests by door, route and status', async () => {
    const before = await scrape(server.url);
    expect([...before.keys()]).toEqual(
      expect.arrayContaining([
        'process_cpu_seconds_total',
        'nodejs_eventloop_lag_seconds',
        'tidegate_db_pool_connections',
      ]),
    );
    const key = server.key('PROFESSIONAL');
    const lookup = { door: 'rest', route: 'GET /v1/vessels/lookup', status: '200' };
    expect((await rest(server.url, '/v1/vessels/lookup?imo=9074729', { key })).status).toBe(200);
    expect((await rest(server.url, '/v1/port-calls/nope', { key })).status).toBe(404);
    const gql = await rest(server.url, '/graphql', {
      method: 'POST',
      key,
      body: { query: 'query Me { viewer { accountId } }' },
    });
    expect(gql.status).toBe(200);

    const after = await scrape(server.url);
    expect(value(after, 'tidegate_requests_total', lookup)).toBe(
      value(before, 'tidegate_requests_total', lookup) + 1,
    );
    expect(
      value(after, 'tidegate_request_duration_seconds', { door: 'rest', route: 'GET /v1/vessels/lookup' }),
    ).toBe(
      value(before, 'tidegate_request_duration_seconds', { door: 'rest', route: 'GET /v1/vessels/lookup' }) +
        1,
    );
    expect(
      value(after, 'tidegate_requests_total', { door: 'graphql-http', route: 'query Me', status: '200' }),
    ).toBeGreaterThanOrEqual(1);
    expect(value(after, 'tidegate_errors_total', { door: 'rest', code: 'NOT_FOUND' })).toBe(
      value(before, 'tidegate_errors_total', { door: 'rest', code: 'NOT_FOUND' }) + 1,
    );
    expect(
      value(after, 'tidegate_requests_total', { door: 'other', route: '/metrics' }),
    ).toBeGreaterThanOrEqual(1);
  });

  it('gives an operation its own label only when an authenticated caller was admitted: 510 strangers spend none of the 500', async () => {
    for (let batch = 0; batch < 510; batch += 30) {
      await Promise.all(
        Array.from({ length: 30 }, (_, i) =>
          gql(server.url, `query Junk${batch + i} { viewer { plan } }`).then((r) =>
            expect(r.status).toBe(401),
          ),
        ),
      );
    }
    const refused = await gql(server.url, 'query Refused { protocols(first: 1) { totalCount } }', {
      key: server.key('OBSERVER'),
    });
    expect(refused.status).toBe(402);
    const real = await gql(server.url, 'query RealDashboard { viewer { plan } }', {
      key: server.key('INSTITUTIONAL'),
    });
    expect(real.status).toBe(200);
    const after = await scrape(server.url);
    const graphql = { door: 'graphql-http' };
    expect(
      value(after, 'tidegate_requests_total', { ...graphql, route: 'query RealDashboard', status: '200' }),
    ).toBe(1);
    expect(value(after, 'tidegate_requests_total', { ...graphql, route: 'unadmitted', status: '401' })).toBe(
      510,
    );
    expect(value(after, 'tidegate_requests_total', { ...graphql, route: 'unadmitted', status: '402' })).toBe(
      1,
    );
    const routes = after.get('tidegate_requests_total')!.series.map((s) => s.labels.route);
    expect(routes.filter((r) => r?.startsWith('query Junk') || r === 'query Refused')).toEqual([]);
  });

  it('counts rate-limit refusals by plan', async () => {
    const key = server.key('ANALYST');
    const before = await scrape(server.url);
    // The limit is two a minute in fixed windows: three calls that straddle a minute boundary all pass,
    // so call until one is refused (at most one boundary falls inside a few fast calls).
    const statuses: number[] = [];
    while (statuses.length < 6 && !statuses.includes(429)) {
      statuses.push((await rest(server.url, '/v1/protocols', { key })).status);
    }
    expect(statuses).toContain(429);
    const after = await scrape(server.url);
    const refused = { reason: 'rate_limit', plan: 'ANALYST' };
    expect(value(after, 'tidegate_admission_refusals_total', refused)).toBe(
      value(before, 'tidegate_admission_refusals_total', refused) + statuses.filter((s) => s === 429).length,
    );
    expect(
      value(after, 'tidegate_errors_total', { door: 'rest', code: 'RATE_LIMIT_EXCEEDED' }),
    ).toBeGreaterThan(0);
  });

  it('shows WebSocket connections and subscriptions while they are open', async () => {
    // Not the Analyst key: the refusal test spent its two calls a minute.
    const session = wsSession(server.url, { apiKey: server.key('PROFESSIONAL') });
    const sub = session.subscribe('subscription { tierChanged(slugs: ["alpha"]) { slug } }');
    const families = await waitFor(
      () => scrape(server.url),
      (scraped) => value(scraped, 'tidegate_ws_subscriptions') >= 1,
      { what: 'the subscription in the scrape' },
    );
    expect(sub.errors).toEqual([]);
    expect(value(families, 'tidegate_ws_connections')).toBe(1);
    expect(value(families, 'tidegate_ws_subscriptions')).toBe(1);
    await session.dispose();
    await eventually(() => server.app.ws.connectionCount === 0, 'socket closed');
    const after = await scrape(server.url);
    expect(value(after, 'tidegate_ws_connections')).toBe(0);
    expect(value(after, 'tidegate_ws_subscriptions')).toBe(0);
  });

  it('counts published events and webhook delivery attempts, and shows the outbox backlog', async () => {
    const key = server.key('PROFESSIONAL');
    const registered = await rest(server.url, '/v1/webhooks', {
      method: 'POST',
      key,
      body: { url: receiver.url, event_types: ['tier_change'] },
    });
    expect(registered.status, registered.text).toBe(201);
    const before = await scrape(server.url);
    receiver.respond = () => 500;
    await commitEvents(server, [tierChange('alpha')]);
    await receiver.waitFor((all) => all.length >= 1);
    const failing = await waitFor(
      () => scrape(server.url),
      (scraped) => value(scraped, 'tidegate_webhook_delivery_attempts_total', { outcome: 'retry' }) > 0,
      { what: 'the retried attempt in the scrape' },
    );
    expect(value(failing, 'tidegate_events_published_total', { type: 'tier_change' })).toBe(
      value(before, 'tidegate_events_published_total', { type: 'tier_change' }) + 1,
    );
    expect(value(failing, 'tidegate_webhook_delivery_attempts_total', { outcome: 'retry' })).toBe(1);
    // The delivery waits for its retry: it is the backlog, and its age grows.
    expect(value(failing, 'tidegate_outbox_pending_deliveries')).toBe(1);
    expect(value(failing, 'tidegate_outbox_oldest_undelivered_age_seconds')).toBeGreaterThan(0);
  });

  it('wants the bearer token when METRICS_TOKEN is set', async () => {
    const guarded = await startTestServer({ seed: false, env: { METRICS_TOKEN: 'scrape-secret' } });
    try {
      const bare = await fetch(`${guarded.url}/metrics`);
      expect(bare.status).toBe(401);
      expect(bare.headers.get('www-authenticate')).toMatch(/^Bearer/);
      const wrong = await fetch(`${guarded.url}/metrics`, { headers: { authorization: 'Bearer nope' } });
      expect(wrong.status).toBe(401);
      expect(value(await scrape(guarded.url, 'scrape-secret'), 'tidegate_read_model_version')).toBe(0);
    } finally {
      await guarded.close();
    }
  });
});
