import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { HOUR } from '../../src/kernel/clock.js';
import {
  Invoice,
  InvoiceStatus,
  Port,
  PortCall,
  PortCallStatus,
  ServiceOrder,
  ServiceOrderStatus,
  ServiceType,
  Vendor,
  Vessel,
} from '../../src/port-ops/entities.js';
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

  it('bunker volumes of an unknown port are 404, as for forecasts', async () => {
    for (const path of [
      '/v1/analytics/bunker-volumes?portLocode=ZWZZZ',
      '/v1/predictions/bunker-demand?portLocode=ZWZZZ',
    ]) {
      const res = await rest(server.url, path, { key });
      expect(res.status, path).toBe(404);
      expect(res.body.error.message).toBe("Port 'ZWZZZ' was not found");
    }
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

  it('computes exact analytics over a small hand-checked dataset', async () => {
    // The Analyst account has no port-ops history of its own: the fixture is all it sees.
    const accountId = server.demo.accounts.find((a) => a.plan === 'ANALYST')!.accountId;
    const { secret } = await createKey(server, { plan: 'ANALYST', scopes: 'read:analytics' });
    const em = server.database.db.em();
    const ports = new Map((await em.find(Port, {})).map((p) => [p.locode, p.id]));
    const vessels = new Map((await em.find(Vessel, {})).map((v) => [v.imo, v.id]));
    const t = (iso: string) => new Date(`${iso}Z`);
    const tanker = vessels.get('9074729')!;
    const boxship = vessels.get('9321483')!;

    const calls: Array<Partial<PortCall>> = [];
    const addCall = (port: string, vesselId: string, ata: string, hours: number, status = 'DEPARTED') => {
      const id = randomUUID();
      const arrived = t(ata);
      calls.push({
        id,
        accountId,
        vesselId,
        portId: ports.get(port)!,
        voyageReference: `FX-${calls.length}`,
        status: status as PortCallStatus,
        eta: arrived,
        ata: arrived,
        atb: arrived,
        atd: status === 'DEPARTED' ? new Date(arrived.getTime() + hours * HOUR) : null,
        createdAt: arrived,
        updatedAt: arrived,
      });
      return id;
    };
    const c1 = addCall('SGSIN', tanker, '2025-01-10T00:00:00', 10);
    const c2 = addCall('SGSIN', tanker, '2025-02-10T00:00:00', 20);
    const c3 = addCall('SGSIN', boxship, '2025-02-15T00:00:00', 30);
    const c4 = addCall('SGSIN', boxship, '2025-04-01T00:00:00', 40);
    const c5 = addCall('NLRTM', tanker, '2025-03-01T00:00:00', 12);
    addCall('SGSIN', tanker, '2024-12-31T23:00:00', 100); // arrived before the window
    addCall('SGSIN', tanker, '2025-05-01T00:00:00', 0, 'BERTHED'); // not departed

    const vendor = (name: string, services: ServiceType[]): Partial<Vendor> => ({
      id: randomUUID(),
      accountId,
      name,
      services,
      ports: ['SGSIN', 'NLRTM'],
      active: true,
      createdAt: t('2024-01-01T00:00:00'),
    });
    const bunkers = vendor('Fixture Bunkers', [ServiceType.BUNKERING]);
    const pilots = vendor('Fixture Pilots', [ServiceType.PILOTAGE]);

    const orders: Array<Partial<ServiceOrder>> = [];
    const addOrder = (
      portCallId: string,
      vendorId: string,
      status: ServiceOrderStatus,
      requestedFor: string,
      completedAt: string | null,
      details: Record<string, unknown> = {},
    ) =>
      orders.push({
        id: randomUUID(),
        accountId,
        portCallId,
        vendorId,
        serviceType: vendorId === bunkers.id ? ServiceType.BUNKERING : ServiceType.PILOTAGE,
        details,
        status,
        requestedFor: t(requestedFor),
        completedAt: completedAt ? t(completedAt) : null,
        createdAt: t('2025-01-05T00:00:00'),
        updatedAt: t('2025-01-05T00:00:00'),
      });
    const fuel = (fuelType: string, quantity: number, unit = 'MT') => ({ fuelType, quantity, unit });
    const DONE = ServiceOrderStatus.COMPLETED;
    addOrder(c1, bunkers.id!, DONE, '2025-01-11T00:00:00', '2025-01-11T01:00:00', fuel('VLSFO', 500)); // on time
    addOrder(c1, bunkers.id!, DONE, '2025-01-11T00:00:00', '2025-01-12T00:00:00', fuel('VLSFO', 50)); // late
    addOrder(c2, bunkers.id!, DONE, '2025-02-11T00:00:00', '2025-02-11T02:00:00', fuel('VLSFO', 300.5)); // +2 h: on time
    addOrder(c3, bunkers.id!, DONE, '2025-02-16T00:00:00', '2025-02-16T03:00:00', fuel('MGO', 100)); // late
    addOrder(c5, bunkers.id!, DONE, '2025-03-02T00:00:00', '2025-03-02T00:00:00', fuel('VLSFO', 200, 'M3'));
    addOrder(c4, bunkers.id!, ServiceOrderStatus.CANCELLED, '2025-04-01T00:00:00', null, fuel('VLSFO', 400));
    addOrder(c4, bunkers.id!, ServiceOrderStatus.REJECTED, '2025-04-01T00:00:00', null, fuel('HSFO', 10));
    addOrder(c4, bunkers.id!, ServiceOrderStatus.REQUESTED, '2025-04-01T00:00:00', null, fuel('HSFO', 20));
    addOrder(c1, pilots.id!, DONE, '2025-01-10T00:00:00', '2025-01-10T01:00:00');
    addOrder(c2, pilots.id!, ServiceOrderStatus.CANCELLED, '2025-02-10T00:00:00', null);

    const invoice = (
      vendorId: string,
      currency: string,
      total: string,
      status: InvoiceStatus,
      issuedAt: string | null,
    ): Partial<Invoice> => ({
      id: randomUUID(),
      accountId,
      vendorId,
      number: `FX-${randomUUID().slice(0, 8)}`,
      status,
      currency,
      lines: [],
      serviceOrderIds: [],
      taxRate: '0.00',
      subtotal: total,
      tax: '0.00',
      total,
      dueDate: t('2025-06-01T00:00:00'),
      issuedAt: issuedAt ? t(issuedAt) : null,
      paidAt: null,
      createdAt: t('2025-01-01T00:00:00'),
    });
    const invoices = [
      invoice(bunkers.id!, 'USD', '1000.10', InvoiceStatus.PAID, '2025-02-01T00:00:00'),
      invoice(bunkers.id!, 'USD', '500.05', InvoiceStatus.ISSUED, '2025-03-01T00:00:00'),
      invoice(bunkers.id!, 'EUR', '200.00', InvoiceStatus.PAID, '2025-03-05T00:00:00'),
      invoice(pilots.id!, 'USD', '300.00', InvoiceStatus.ISSUED, '2025-04-01T00:00:00'),
      invoice(bunkers.id!, 'USD', '999.99', InvoiceStatus.DRAFT, null),
      invoice(bunkers.id!, 'USD', '700.00', InvoiceStatus.VOID, '2025-02-10T00:00:00'),
      invoice(pilots.id!, 'USD', '50.00', InvoiceStatus.PAID, '2024-12-15T00:00:00'),
    ];
    await em.insertMany(Vendor, [bunkers, pilots] as never);
    await em.insertMany(PortCall, calls as never);
    await em.insertMany(ServiceOrder, orders as never);
    await em.insertMany(Invoice, invoices as never);

    const window = 'from=2025-01-01T00:00:00Z&to=2025-07-01T00:00:00Z';
    const get = async (path: string) => {
      const res = await rest(server.url, `${path}${path.includes('?') ? '&' : '?'}${window}`, {
        key: secret,
      });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      return res.body.rows;
    };

    // SGSIN [10, 20, 30, 40] h: mean 25, median 25, p90 = 30 + 0.7 × 10 = 37. NLRTM [12].
    expect(await get('/v1/analytics/turnaround?byPort=true')).toEqual([
      {
        portLocode: 'NLRTM',
        vesselType: null,
        period: null,
        calls: 1,
        meanHours: 12,
        medianHours: 12,
        p90Hours: 12,
      },
      {
        portLocode: 'SGSIN',
        vesselType: null,
        period: null,
        calls: 4,
        meanHours: 25,
        medianHours: 25,
        p90Hours: 37,
      },
    ]);
    // Q1 tankers [10, 12, 20]: mean 14, median 12, p90 = 12 + 0.8 × 8 = 18.4.
    expect(await get('/v1/analytics/turnaround?byPort=false&byVesselType=true&period=QUARTER')).toEqual([
      {
        portLocode: null,
        vesselType: 'CONTAINER_SHIP',
        period: '2025-Q1',
        calls: 1,
        meanHours: 30,
        medianHours: 30,
        p90Hours: 30,
      },
      {
        portLocode: null,
        vesselType: 'TANKER',
        period: '2025-Q1',
        calls: 3,
        meanHours: 14,
        medianHours: 12,
        p90Hours: 18.4,
      },
      {
        portLocode: null,
        vesselType: 'CONTAINER_SHIP',
        period: '2025-Q2',
        calls: 1,
        meanHours: 40,
        medianHours: 40,
        p90Hours: 40,
      },
    ]);
    expect(await get('/v1/analytics/bunker-volumes')).toEqual([
      { month: '2025-01', portLocode: 'SGSIN', fuelType: 'VLSFO', unit: 'MT', quantity: 550, deliveries: 2 },
      { month: '2025-02', portLocode: 'SGSIN', fuelType: 'MGO', unit: 'MT', quantity: 100, deliveries: 1 },
      {
        month: '2025-02',
        portLocode: 'SGSIN',
        fuelType: 'VLSFO',
        unit: 'MT',
        quantity: 300.5,
        deliveries: 1,
      },
      { month: '2025-03', portLocode: 'NLRTM', fuelType: 'VLSFO', unit: 'M3', quantity: 200, deliveries: 1 },
    ]);
    expect(await get('/v1/analytics/bunker-volumes?portLocode=NLRTM')).toEqual([
      { month: '2025-03', portLocode: 'NLRTM', fuelType: 'VLSFO', unit: 'M3', quantity: 200, deliveries: 1 },
    ]);
    // Bunkers: 8 orders, 5 completed, 3 on time (≤ requestedFor + 2 h), 2 cancelled or rejected.
    expect(await get('/v1/analytics/vendor-performance')).toEqual([
      {
        vendorId: bunkers.id,
        vendorName: 'Fixture Bunkers',
        orders: 8,
        completed: 5,
        onTime: 3,
        onTimeRate: 0.6,
        cancelled: 2,
        cancellationRate: 0.25,
      },
      {
        vendorId: pilots.id,
        vendorName: 'Fixture Pilots',
        orders: 2,
        completed: 1,
        onTime: 1,
        onTimeRate: 1,
        cancelled: 1,
        cancellationRate: 0.5,
      },
    ]);
    // ISSUED and PAID by issue date in the window; DRAFT, VOID and last year's are left out.
    expect(await get('/v1/analytics/vendor-spend')).toEqual([
      {
        vendorId: bunkers.id,
        vendorName: 'Fixture Bunkers',
        currency: 'USD',
        invoices: 2,
        total: '1500.15',
        paid: '1000.10',
        outstanding: '500.05',
      },
      {
        vendorId: pilots.id,
        vendorName: 'Fixture Pilots',
        currency: 'USD',
        invoices: 1,
        total: '300.00',
        paid: '0.00',
        outstanding: '300.00',
      },
      {
        vendorId: bunkers.id,
        vendorName: 'Fixture Bunkers',
        currency: 'EUR',
        invoices: 1,
        total: '200.00',
        paid: '200.00',
        outstanding: '0.00',
      },
    ]);
  });

  it('rejects a window longer than 3 years', async () => {
    const res = await rest(server.url, '/v1/analytics/turnaround?from=2010-01-01T00:00:00Z', { key });
    expect(res.status).toBe(400);
    expect(res.body.error.message).toMatch(/at most 3 years/);
  });

  it('predicts a scheduled call from its ETA with quantiles, basis, sample size, method version and held-out error', async () => {
    const calls = await rest(server.url, '/v1/port-calls?status=SCHEDULED&limit=1', { key });
    const res = await rest(server.url, `/v1/predictions/port-calls/${calls.body.data[0].id}`, { key });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      portCallId: calls.body.data[0].id,
      method: 'empirical-quantiles',
      methodVersion: '2.0.0',
      anchorKind: 'ETA',
      anchor: calls.body.data[0].eta,
    });
    expect(['PORT_VESSEL_TYPE_SEASON', 'PORT_VESSEL_TYPE', 'PORT', 'GLOBAL']).toContain(res.body.basis);
    expect(res.body.sampleSize).toBeGreaterThanOrEqual(20);
    const { p10, p50, p90 } = res.body.departureHours;
    expect(p10).toBeLessThanOrEqual(p50);
    expect(p50).toBeLessThanOrEqual(p90);
    expect(new Date(res.body.departureAt.p50).getTime()).toBeGreaterThan(
      new Date(res.body.berthAt.p50).getTime(),
    );
    expect(res.body.evaluation).toMatchObject({ anchorKind: 'ETA', holdoutDays: 90 });
    expect(res.body.evaluation.evaluatedCalls).toBeGreaterThan(20);
    expect(res.body.evaluation.departureMaeHours).toBeGreaterThan(0);
    expect(res.body.evaluation.departureCoverage).toBeGreaterThan(0);
    expect(res.body.evaluation.departureCoverage).toBeLessThanOrEqual(1);
  });

  it('never predicts a time in the past for calls still in port, and evaluates from their anchor', async () => {
    const ago = (hours: number) => new Date(Date.now() - hours * 3_600_000).toISOString();
    const post = (path: string, body: unknown) => rest(server.url, path, { method: 'POST', key, body });
    const arrived = await post('/v1/port-calls', {
      vesselImo: '9074729',
      portLocode: 'SGSIN',
      voyageReference: 'PRED-ARRIVED',
      eta: ago(40),
    });
    await post(`/v1/port-calls/${arrived.body.id}/status`, { status: 'ARRIVED', at: ago(30) });
    const berthed = await post('/v1/port-calls', {
      vesselImo: '9074729',
      portLocode: 'SGSIN',
      voyageReference: 'PRED-BERTHED',
      eta: ago(90),
    });
    await post(`/v1/port-calls/${berthed.body.id}/status`, { status: 'ARRIVED', at: ago(80) });
    await post(`/v1/port-calls/${berthed.body.id}/status`, { status: 'BERTHED', at: ago(70) });

    for (const [id, kind] of [
      [arrived.body.id, 'ATA'],
      [berthed.body.id, 'ATB'],
    ]) {
      const asked = Date.now();
      const res = await rest(server.url, `/v1/predictions/port-calls/${id}`, { key });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ anchorKind: kind, evaluation: { anchorKind: kind } });
      expect(res.body.elapsedHours).toBeGreaterThanOrEqual(30);
      expect(['ELAPSED', 'MEMORYLESS']).toContain(res.body.conditioning);
      for (const q of ['p10', 'p50', 'p90'])
        expect(new Date(res.body.departureAt[q]).getTime()).toBeGreaterThanOrEqual(asked);
      if (kind === 'ATA') expect(new Date(res.body.berthAt.p10).getTime()).toBeGreaterThanOrEqual(asked);
      else expect(res.body.berthHours).toBeNull();
    }
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
