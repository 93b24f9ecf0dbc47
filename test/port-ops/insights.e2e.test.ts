import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeEachDialect } from '../helpers/env.js';
import { createKey, gql, rest, startTestServer, type TestServer } from '../helpers/server.js';

describeEachDialect('port-ops analytics and predictions', (dialect) => {
  let server: TestServer;
  let key: string;
  beforeAll(async () => {
    server = await startTestServer({ dialect });
    key = server.key('INSTITUTIONAL');
  });
  afterAll(() => server?.close());

  it('turnaround by port over the demo history: mean, median and p90 in hours', async () => {
    const res = await rest(server.url, '/v1/analytics/turnaround?byPort=true', { key });
    expect(res.status).toBe(200);
    expect(res.body.rows.length).toBe(8);
    for (const row of res.body.rows) {
      expect(row.portLocode).toMatch(/^[A-Z]{5}$/);
      expect(row.calls).toBeGreaterThan(10);
      expect(row.p90Hours).toBeGreaterThanOrEqual(row.medianHours);
      expect(row.meanHours).toBeGreaterThan(0);
    }
    const byType = await rest(
      server.url,
      '/v1/analytics/turnaround?byPort=false&byVesselType=true&period=QUARTER',
      { key },
    );
    expect(byType.status).toBe(200);
    expect(byType.body.rows[0]).toMatchObject({
      portLocode: null,
      period: expect.stringMatching(/^\d{4}-Q[1-4]$/),
    });
  });

  it('bunker volumes, vendor performance and vendor spend', async () => {
    const volumes = await rest(server.url, '/v1/analytics/bunker-volumes?portLocode=SGSIN', { key });
    expect(volumes.status).toBe(200);
    expect(volumes.body.rows.length).toBeGreaterThan(5);
    expect(volumes.body.rows.every((r: { portLocode: string }) => r.portLocode === 'SGSIN')).toBe(true);

    const performance = await rest(server.url, '/v1/analytics/vendor-performance', { key });
    expect(performance.status).toBe(200);
    const row = performance.body.rows[0];
    expect(row.onTimeRate).toBeGreaterThan(0);
    expect(row.onTimeRate).toBeLessThanOrEqual(1);
    expect(row.cancelled).toBeLessThanOrEqual(row.orders);

    const spend = await rest(server.url, '/v1/analytics/vendor-spend', { key });
    expect(spend.status).toBe(200);
    for (const r of spend.body.rows) {
      expect(r.total).toMatch(/^\d+\.\d{2}$/);
      // Exact decimal arithmetic: paid + outstanding is the total to the cent.
      expect(BigInt(r.paid.replace('.', '')) + BigInt(r.outstanding.replace('.', ''))).toBe(
        BigInt(r.total.replace('.', '')),
      );
    }
  });

  it('rejects a window longer than 3 years', async () => {
    const res = await rest(server.url, '/v1/analytics/turnaround?from=2010-01-01T00:00:00Z', { key });
    expect(res.status).toBe(400);
    expect(res.body.error.message).toMatch(/at most 3 years/);
  });

  it('predicts a scheduled call with quantiles, basis, sample size, method version and held-out MAE', async () => {
    const calls = await rest(server.url, '/v1/port-calls?status=SCHEDULED&limit=1', { key });
    const res = await rest(server.url, `/v1/predictions/port-calls/${calls.body.data[0].id}`, { key });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      method: 'empirical-quantiles',
      methodVersion: '1.0.0',
      anchorKind: 'ETA',
    });
    expect(['PORT_VESSEL_TYPE_SEASON', 'PORT_VESSEL_TYPE', 'PORT', 'GLOBAL']).toContain(res.body.basis);
    expect(res.body.sampleSize).toBeGreaterThanOrEqual(20);
    const { p10, p50, p90 } = res.body.timeInPortHours;
    expect(p10).toBeLessThanOrEqual(p50);
    expect(p50).toBeLessThanOrEqual(p90);
    expect(new Date(res.body.departureAt.p50).getTime()).toBeGreaterThan(
      new Date(res.body.berthAt.p50).getTime(),
    );
    expect(res.body.evaluation.evaluatedCalls).toBeGreaterThan(20);
    expect(res.body.evaluation.timeInPortMaeHours).toBeGreaterThan(0);
  });

  it('refuses to predict a departed call (409) and answers 404 for an unknown one', async () => {
    const departed = await rest(server.url, '/v1/port-calls?status=DEPARTED&limit=1', { key });
    const res = await rest(server.url, `/v1/predictions/port-calls/${departed.body.data[0].id}`, { key });
    expect(res.status).toBe(409);
    expect(res.body.error.message).toMatch(/DEPARTED/);
    const missing = await rest(
      server.url,
      '/v1/predictions/port-calls/00000000-0000-4000-8000-000000000000',
      { key },
    );
    expect(missing.status).toBe(404);
  });

  it('forecasts bunker demand per fuel type with an interval and its back-tested error', async () => {
    const res = await rest(server.url, '/v1/predictions/bunker-demand?portLocode=SGSIN&months=3', { key });
    expect(res.status).toBe(200);
    expect(res.body.length).toBeGreaterThan(0);
    const vlsfo = res.body.find((f: { fuelType: string }) => f.fuelType === 'VLSFO');
    expect(vlsfo).toMatchObject({
      unit: 'MT',
      method: 'seasonal-naive-mean',
      methodVersion: '1.0.0',
      evaluatedMonths: 3,
    });
    expect(vlsfo.months).toHaveLength(3);
    for (const m of vlsfo.months) expect(m.p10).toBeLessThanOrEqual(m.p50);
    expect(vlsfo.historyMonths).toBeGreaterThanOrEqual(20);
    expect(vlsfo.maeQuantity).not.toBeNull();
  });

  it('needs read:analytics and ai:predictions', async () => {
    const { secret } = await createKey(server, { scopes: 'read:port_calls' });
    const analytics = await rest(server.url, '/v1/analytics/vendor-spend', { key: secret });
    expect(analytics.status).toBe(403);
    const prediction = await gql(server.url, '{ bunkerDemandForecast(portLocode: "SGSIN") { fuelType } }', {
      key: secret,
    });
    expect(prediction.body.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
  });
});
