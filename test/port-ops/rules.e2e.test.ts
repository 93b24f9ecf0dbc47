import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EventRecord } from '../../src/events/entities.js';
import { Invoice, PortCall, ServiceOrder, StatusChange, Vendor } from '../../src/port-ops/entities.js';
import { describeEachDialect } from '../helpers/env.js';
import { createKey, gql, rest, startTestServer, type TestServer } from '../helpers/server.js';

const BUNKER = { quantity: 500, unit: 'MT', fuelType: 'VLSFO' };

describeEachDialect('port-ops rules: every error is clear and writes nothing', (dialect) => {
  let server: TestServer;
  let key: string;
  let scheduled: { id: string; portLocode: string };
  let bunkerVendorHere: string;
  let bunkerVendorElsewhere: string;

  /** Rows in every table a port-ops write touches, to prove a refused request changed nothing. */
  async function snapshot() {
    const em = server.database.db.em();
    const counts = await Promise.all(
      [PortCall, ServiceOrder, StatusChange, Vendor, Invoice, EventRecord].map((e) =>
        em.count(e as never, {}),
      ),
    );
    return counts.join(',');
  }

  async function expectRefused(
    run: () => Promise<{ status: number; body: { error: { code: string; message: string } } }>,
    status: number,
    message: RegExp,
  ) {
    const before = await snapshot();
    const res = await run();
    expect(res.status, JSON.stringify(res.body)).toBe(status);
    expect(res.body.error.message).toMatch(message);
    expect(await snapshot()).toBe(before);
    return res;
  }

  beforeAll(async () => {
    server = await startTestServer({ dialect });
    key = server.key('INSTITUTIONAL');
    scheduled = (await rest(server.url, '/v1/port-calls?status=SCHEDULED&limit=1', { key })).body.data[0];
    const vendors = (await rest(server.url, '/v1/vendors?serviceType=BUNKERING&limit=100', { key })).body
      .data as Array<{ id: string; ports: string[] }>;
    bunkerVendorHere = vendors.find((v) => v.ports.includes(scheduled.portLocode))!.id;
    bunkerVendorElsewhere = vendors.find((v) => !v.ports.includes(scheduled.portLocode))!.id;
  });
  afterAll(() => server?.close());

  const post = (path: string, body: unknown, apiKey = key) =>
    rest(server.url, path, { method: 'POST', key: apiKey, body });
  const newCall = (over: Record<string, unknown> = {}) => ({
    vesselImo: '9074729',
    portLocode: 'SGSIN',
    voyageReference: `T-${Math.random().toString(36).slice(2, 10)}`,
    eta: '2030-01-10T06:00:00Z',
    etb: '2030-01-10T12:00:00Z',
    etd: '2030-01-11T12:00:00Z',
    ...over,
  });

  describe('port calls', () => {
    it('bad IMO check digit → 400 naming the rule', () =>
      expectRefused(
        () => post('/v1/port-calls', newCall({ vesselImo: '9074728' })),
        400,
        /^vesselImo: IMO 9074728 fails the check digit/,
      ));

    it('bad UN/LOCODE → 400', async () => {
      await expectRefused(
        () => post('/v1/port-calls', newCall({ portLocode: 'SG1IN' })),
        400,
        /^portLocode: a UN\/LOCODE is 2 letters/,
      );
      await expectRefused(
        () => post('/v1/port-calls', newCall({ portLocode: 'XQABC' })),
        400,
        /^portLocode: must be an ISO 3166-1/,
      );
    });

    it('unknown vessel or port → 404', async () => {
      await expectRefused(
        () => post('/v1/port-calls', newCall({ vesselImo: '1234567' })),
        404,
        /Vessel '1234567' was not found/,
      );
      await expectRefused(
        () => post('/v1/port-calls', newCall({ portLocode: 'GBLON' })),
        404,
        /Port 'GBLON' was not found/,
      );
    });

    it('estimates out of order → 400; duplicate voyage reference → 409', async () => {
      await expectRefused(
        () => post('/v1/port-calls', newCall({ etd: '2030-01-09T00:00:00Z' })),
        400,
        /^etd: must not be before etb/,
      );
      const created = await post('/v1/port-calls', newCall({ voyageReference: 'DUP-1' }));
      expect(created.status).toBe(201);
      await expectRefused(
        () => post('/v1/port-calls', newCall({ voyageReference: 'DUP-1' })),
        409,
        /Voyage reference 'DUP-1' is already used/,
      );
    });

    it('walks SCHEDULED → ARRIVED → BERTHED → DEPARTED, stamping actual times, recording history and staging events', async () => {
      const created = await post(
        '/v1/port-calls',
        newCall({ eta: '2026-01-10T06:00:00Z', etb: null, etd: null }),
      );
      expect(created.status).toBe(201);
      expect(created.body).toMatchObject({ status: 'SCHEDULED', vesselImo: '9074729', portLocode: 'SGSIN' });
      const id = created.body.id;
      for (const [status, at] of [
        ['ARRIVED', '2026-01-10T07:00:00.000Z'],
        ['BERTHED', '2026-01-10T15:00:00.000Z'],
        ['DEPARTED', '2026-01-11T20:00:00.000Z'],
      ]) {
        const res = await post(`/v1/port-calls/${id}/status`, { status, at });
        expect(res.status).toBe(200);
        expect(res.body.status).toBe(status);
      }
      const read = await rest(server.url, `/v1/port-calls/${id}`, { key });
      expect(read.body).toMatchObject({
        ata: '2026-01-10T07:00:00.000Z',
        atb: '2026-01-10T15:00:00.000Z',
        atd: '2026-01-11T20:00:00.000Z',
      });
      expect(read.body.statusHistory.map((c: { to: string }) => c.to)).toEqual([
        'SCHEDULED',
        'ARRIVED',
        'BERTHED',
        'DEPARTED',
      ]);
      const events = await server.database.db
        .em()
        .find(EventRecord, { type: { $like: 'port_call.%' } }, { orderBy: { occurredAt: 'asc' } });
      const mine = events.filter(
        (e) => (e.payload.portCallId ?? (e.payload.portCall as { id: string } | undefined)?.id) === id,
      );
      expect(mine.map((e) => e.type)).toEqual([
        'port_call.created',
        'port_call.status_changed',
        'port_call.status_changed',
        'port_call.status_changed',
      ]);
      expect(mine[3]!.payload).toMatchObject({
        from: 'BERTHED',
        to: 'DEPARTED',
        vesselImo: '9074729',
        portLocode: 'SGSIN',
        actor: expect.stringMatching(/^api_key:/),
      });

      await expectRefused(
        () => post(`/v1/port-calls/${id}/status`, { status: 'ARRIVED' }),
        409,
        /cannot go from DEPARTED to ARRIVED \(DEPARTED is final\)/,
      );
      await expectRefused(
        () => rest(server.url, `/v1/port-calls/${id}`, { method: 'PATCH', key, body: { agent: 'x' } }),
        409,
        /is DEPARTED and can no longer be changed/,
      );
      await expectRefused(
        () =>
          post('/v1/service-orders', {
            portCallId: id,
            serviceType: 'BUNKERING',
            vendorId: bunkerVendorHere,
            details: BUNKER,
          }),
        409,
        /is DEPARTED; services can only be ordered/,
      );
    });

    it('illegal transition → 409 naming both states', () =>
      expectRefused(
        () => post(`/v1/port-calls/${scheduled.id}/status`, { status: 'BERTHED' }),
        409,
        /cannot go from SCHEDULED to BERTHED \(from SCHEDULED it may go to ARRIVED or CANCELLED\)/,
      ));

    it('delete: only a call without orders or documents; then 404', async () => {
      const withOrders = (await rest(server.url, '/v1/service-orders?limit=1', { key })).body.data[0]
        .portCallId;
      await expectRefused(
        () => rest(server.url, `/v1/port-calls/${withOrders}`, { method: 'DELETE', key }),
        409,
        /cancel it instead/,
      );
      const created = await post('/v1/port-calls', newCall());
      const del = await rest(server.url, `/v1/port-calls/${created.body.id}`, { method: 'DELETE', key });
      expect(del.status).toBe(204);
      expect((await rest(server.url, `/v1/port-calls/${created.body.id}`, { key })).status).toBe(404);
    });
  });

  describe('service orders', () => {
    const order = (over: Record<string, unknown> = {}) => ({
      portCallId: scheduled.id,
      serviceType: 'BUNKERING',
      vendorId: bunkerVendorHere,
      details: BUNKER,
      ...over,
    });

    it('unknown vendor → 404', () =>
      expectRefused(
        () => post('/v1/service-orders', order({ vendorId: '00000000-0000-4000-8000-000000000000' })),
        404,
        /Vendor '00000000-0000-4000-8000-000000000000' was not found/,
      ));

    it('vendor not serving that port → 400 naming the port', () =>
      expectRefused(
        () => post('/v1/service-orders', order({ vendorId: bunkerVendorElsewhere })),
        400,
        new RegExp(`^vendorId: vendor .* does not serve ${scheduled.portLocode}`),
      ));

    it('vendor not offering the service → 400', async () => {
      const pilots = (
        await rest(server.url, `/v1/vendors?serviceType=PILOTAGE&portLocode=${scheduled.portLocode}`, { key })
      ).body.data[0].id;
      await expectRefused(
        () => post('/v1/service-orders', order({ vendorId: pilots })),
        400,
        /does not offer BUNKERING/,
      );
    });

    it('bunkering without quantity, with quantity 0, a bad unit or fuel, or an unknown detail → 400', async () => {
      await expectRefused(
        () => post('/v1/service-orders', order({ details: { unit: 'MT', fuelType: 'VLSFO' } })),
        400,
        /^details\.quantity: is required for BUNKERING/,
      );
      await expectRefused(
        () => post('/v1/service-orders', order({ details: { ...BUNKER, quantity: 0 } })),
        400,
        /^details\.quantity: must be a number greater than 0/,
      );
      await expectRefused(
        () => post('/v1/service-orders', order({ details: { ...BUNKER, unit: 'KG' } })),
        400,
        /^details\.unit: must be one of MT, M3/,
      );
      await expectRefused(
        () => post('/v1/service-orders', order({ details: { ...BUNKER, fuelType: 'COAL' } })),
        400,
        /^details\.fuelType: must be one of/,
      );
      await expectRefused(
        () => post('/v1/service-orders', order({ details: { ...BUNKER, quantiy: 5 } })),
        400,
        /^details\.quantiy: is not a BUNKERING detail/,
      );
    });

    it('unknown service type → 400', () =>
      expectRefused(() => post('/v1/service-orders', order({ serviceType: 'TELEPORT' })), 400, /TELEPORT/));

    it('order status machine: REQUESTED → CONFIRMED → IN_PROGRESS → COMPLETED; COMPLETED → CANCELLED is 409', async () => {
      const created = await post('/v1/service-orders', order());
      expect(created.status).toBe(201);
      await expectRefused(
        () => post(`/v1/service-orders/${created.body.id}/status`, { status: 'COMPLETED' }),
        409,
        /cannot go from REQUESTED to COMPLETED/,
      );
      for (const status of ['CONFIRMED', 'IN_PROGRESS', 'COMPLETED']) {
        expect((await post(`/v1/service-orders/${created.body.id}/status`, { status })).body.status).toBe(
          status,
        );
      }
      await expectRefused(
        () => post(`/v1/service-orders/${created.body.id}/status`, { status: 'CANCELLED' }),
        409,
        /cannot go from COMPLETED to CANCELLED/,
      );
    });
  });

  describe('scopes and tenancy', () => {
    it('missing scope → 403 over REST and GraphQL, nothing written', async () => {
      const { secret } = await createKey(server, { scopes: 'read:port_calls read:service_orders' });
      const rest403 = await expectRefused(
        () =>
          post(
            '/v1/service-orders',
            {
              portCallId: scheduled.id,
              serviceType: 'BUNKERING',
              vendorId: bunkerVendorHere,
              details: BUNKER,
            },
            secret,
          ),
        403,
        /write:service_orders/,
      );
      expect(rest403.body.error.code).toBe('FORBIDDEN');
      const before = await snapshot();
      const graph = await gql(
        server.url,
        'mutation { transitionPortCall(id: "x", status: ARRIVED) { id } }',
        { key: secret },
      );
      expect(graph.body.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
      expect(await snapshot()).toBe(before);
    });

    it("another account's port call is 404, and its lists are empty", async () => {
      const analyst = server.key('ANALYST');
      expect((await rest(server.url, `/v1/port-calls/${scheduled.id}`, { key: analyst })).status).toBe(404);
      expect((await rest(server.url, '/v1/port-calls', { key: analyst })).body.total).toBe(0);
      await expectRefused(
        () => post(`/v1/port-calls/${scheduled.id}/status`, { status: 'ARRIVED' }, analyst),
        404,
        /PortCall/,
      );
    });

    it('REST paging bounds: limit above 100 → 400 naming limit', async () => {
      const res = await rest(server.url, '/v1/port-calls?limit=101', { key });
      expect(res.status).toBe(400);
      expect(res.body.error.message).toMatch(/^limit: must be between 1 and 100/);
    });
  });

  describe('vendors and invoices', () => {
    it('vendor serving an unknown port or with a bad email → 400', async () => {
      await expectRefused(
        () => post('/v1/vendors', { name: 'X', services: ['TOWAGE'], ports: ['GBLON'] }),
        400,
        /^ports: unknown port\(s\): GBLON/,
      );
      await expectRefused(
        () =>
          post('/v1/vendors', { name: 'X', services: ['TOWAGE'], ports: ['SGSIN'], contactEmail: 'nope' }),
        400,
        /^contactEmail: is not an email/,
      );
    });

    it('computes invoice totals exactly in decimal strings; issuing emits invoice.issued', async () => {
      const res = await post('/v1/invoices', {
        vendorId: bunkerVendorHere,
        number: 'T-0001',
        currency: 'usd',
        taxRate: '7.5',
        dueDate: '2030-02-01T00:00:00Z',
        lines: [
          { description: 'VLSFO', quantity: '500.125', unitPrice: '612.35' },
          { description: 'Barging', quantity: '1', unitPrice: '0.10' },
          { description: 'Barging', quantity: '2', unitPrice: '0.10' },
        ],
      });
      expect(res.status, JSON.stringify(res.body)).toBe(201);
      // 500.125 × 612.35 = 306251.54375 → 306251.54; + 0.10 + 0.20 = 306251.84; tax 7.5 % = 22968.888 → 22968.89
      expect(res.body).toMatchObject({
        currency: 'USD',
        status: 'DRAFT',
        subtotal: '306251.84',
        tax: '22968.89',
        total: '329220.73',
        taxRate: '7.50',
      });
      const issued = await post(`/v1/invoices/${res.body.id}/status`, { status: 'ISSUED' });
      expect(issued.body.status).toBe('ISSUED');
      const event = await server.database.db.em().findOne(EventRecord, { type: 'invoice.issued' });
      expect(event?.payload).toMatchObject({
        invoiceId: res.body.id,
        total: '329220.73',
        currency: 'USD',
        dueDate: '2030-02-01',
      });
      await expectRefused(
        () => post(`/v1/invoices/${res.body.id}/status`, { status: 'DRAFT' }),
        409,
        /cannot go from ISSUED to DRAFT/,
      );
    });

    it('bad currency, too many decimals, or a duplicate number → 400/409', async () => {
      const base = {
        vendorId: bunkerVendorHere,
        number: 'T-0002',
        currency: 'USD',
        dueDate: '2030-02-01T00:00:00Z',
        lines: [{ description: 'x', quantity: '1', unitPrice: '1.00' }],
      };
      await expectRefused(
        () => post('/v1/invoices', { ...base, currency: 'JPY' }),
        400,
        /^currency: must be an ISO 4217 currency with 2 minor digits/,
      );
      await expectRefused(
        () =>
          post('/v1/invoices', { ...base, lines: [{ description: 'x', quantity: '1', unitPrice: '1.005' }] }),
        400,
        /^lines\[0\]\.unitPrice: must be a decimal with at most 2/,
      );
      await expectRefused(
        () => post('/v1/invoices', { ...base, number: 'T-0001' }),
        409,
        /Invoice number 'T-0001' already exists/,
      );
    });
  });
});
