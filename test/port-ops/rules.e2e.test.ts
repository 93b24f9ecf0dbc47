import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EventRecord } from '../../src/events/entities.js';
import { StatusChange } from '../../src/port-ops/entities.js';
import { describeEachDialect } from '../helpers/env.js';
import { createKey, gql, rest, startTestServer, type Json, type TestServer } from '../helpers/server.js';
import { portOpsState } from './state.js';

const BUNKER = { quantity: 500, unit: 'MT', fuelType: 'VLSFO' };

describeEachDialect('port-ops rules: every error is clear and writes nothing', (dialect) => {
  let server: TestServer;
  let key: string;
  let dir: string;
  let scheduled: { id: string; portLocode: string };
  let bunkerVendorHere: string;
  let bunkerVendorElsewhere: string;
  let bunkerVendorSgsin: string;

  /** The whole port-ops state (full rows and document files), to prove a refused request changed nothing. */
  const snapshot = () => portOpsState(server);

  async function expectRefused(
    run: () => Promise<{
      status: number;
      body: { error: { code: string; message: string; details?: Record<string, unknown> } };
    }>,
    status: number,
    message: RegExp,
  ) {
    const before = await snapshot();
    const res = await run();
    expect(res.status, JSON.stringify(res.body)).toBe(status);
    expect(res.body.error.message).toMatch(message);
    expect(await snapshot()).toEqual(before);
    return res;
  }

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'tidegate-rules-'));
    server = await startTestServer({ dialect, env: { DOCUMENTS_DIR: dir } });
    key = server.key('INSTITUTIONAL');
    scheduled = (await rest(server.url, '/v1/port-calls?status=SCHEDULED&limit=1', { key })).body.data[0];
    const vendors = (await rest(server.url, '/v1/vendors?serviceType=BUNKERING&limit=100', { key })).body
      .data as Array<{ id: string; ports: string[] }>;
    bunkerVendorHere = vendors.find((v) => v.ports.includes(scheduled.portLocode))!.id;
    bunkerVendorElsewhere = vendors.find((v) => !v.ports.includes(scheduled.portLocode))!.id;
    bunkerVendorSgsin = vendors.find((v) => v.ports.includes('SGSIN'))!.id;
  });
  afterAll(async () => {
    await server?.close();
    rmSync(dir, { recursive: true, force: true });
  });

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

    it('PATCH with an empty body → 400 "nothing to update"; an unchanged value writes nothing either', async () => {
      const created = await post('/v1/port-calls', newCall());
      const id = created.body.id;
      await expectRefused(
        () => rest(server.url, `/v1/port-calls/${id}`, { method: 'PATCH', key, body: {} }),
        400,
        /^patch: nothing to update; give at least one of voyageReference, agent, eta, etb, etd/,
      );
      const before = await snapshot();
      const same = await rest(server.url, `/v1/port-calls/${id}`, {
        method: 'PATCH',
        key,
        body: { eta: created.body.eta, agent: null },
      });
      expect(same.status).toBe(200);
      expect(same.body.updatedAt).toBe(created.body.updatedAt);
      expect(await snapshot()).toEqual(before);
      const changed = await rest(server.url, `/v1/port-calls/${id}`, {
        method: 'PATCH',
        key,
        body: { agent: 'Anchorpoint' },
      });
      expect(changed.body.agent).toBe('Anchorpoint');
    });

    it("PATCH to another call's voyage reference → 409 naming the field, not a 500", async () => {
      const a = await post('/v1/port-calls', newCall());
      const b = await post('/v1/port-calls', newCall());
      const res = await expectRefused(
        () =>
          rest(server.url, `/v1/port-calls/${b.body.id}`, {
            method: 'PATCH',
            key,
            body: { voyageReference: a.body.voyageReference },
          }),
        409,
        new RegExp(`Voyage reference '${a.body.voyageReference}' is already used`),
      );
      expect(res.body.error.details).toMatchObject({ field: 'voyageReference' });
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

    it('a vendor id that is no UUID → 404 naming it, after the call is checked; an order id that is none → 404', async () => {
      await expectRefused(
        () => post('/v1/service-orders', order({ vendorId: 'not-a-vendor' })),
        404,
        /Vendor 'not-a-vendor' was not found/,
      );
      await expectRefused(
        () =>
          post(
            '/v1/service-orders',
            order({ portCallId: '00000000-0000-4000-8000-000000000000', vendorId: 'not-a-vendor' }),
          ),
        404,
        /PortCall '00000000-0000-4000-8000-000000000000' was not found/,
      );
      await expectRefused(
        () => post('/v1/service-orders/not-an-order/status', { status: 'CONFIRMED' }),
        404,
        /ServiceOrder 'not-an-order' was not found/,
      );
      await expectRefused(
        () => post('/v1/service-orders/00000000-0000-4000-8000-000000000000/status', { status: 'CONFIRMED' }),
        404,
        /ServiceOrder '00000000-0000-4000-8000-000000000000' was not found/,
      );
    });

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
      expectRefused(
        () => post('/v1/service-orders', order({ serviceType: 'TELEPORT' })),
        400,
        /serviceType/,
      ));

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

  describe('service orders follow their call', () => {
    const move = (path: string, status: string) => post(`${path}/status`, { status });
    const newOrder = async (portCallId: string) => {
      const res = await post('/v1/service-orders', {
        portCallId,
        serviceType: 'BUNKERING',
        vendorId: bunkerVendorSgsin,
        details: BUNKER,
      });
      expect(res.status, JSON.stringify(res.body)).toBe(201);
      return `/v1/service-orders/${res.body.id}`;
    };
    const statusOf = async (path: string) => (await rest(server.url, path, { key })).body.status;

    it('cancelling a call cancels its REQUESTED and CONFIRMED orders in the same transaction, with history and events', async () => {
      const call = (await post('/v1/port-calls', newCall())).body;
      const requested = await newOrder(call.id);
      const confirmed = await newOrder(call.id);
      const completed = await newOrder(call.id);
      await move(confirmed, 'CONFIRMED');
      for (const status of ['CONFIRMED', 'IN_PROGRESS', 'COMPLETED']) await move(completed, status);

      const res = await post(`/v1/port-calls/${call.id}/status`, { status: 'CANCELLED' });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect([await statusOf(requested), await statusOf(confirmed), await statusOf(completed)]).toEqual([
        'CANCELLED',
        'CANCELLED',
        'COMPLETED',
      ]);
      const history = (await rest(server.url, confirmed, { key })).body.statusHistory;
      expect(history.map((h: Json) => `${h.from}->${h.to}`)).toEqual([
        'null->REQUESTED',
        'REQUESTED->CONFIRMED',
        'CONFIRMED->CANCELLED',
      ]);
      const events = await server.database.db
        .em()
        .find(EventRecord, { type: 'service_order.status_changed' }, { orderBy: { occurredAt: 'asc' } });
      const cascaded = events.filter((e) => e.payload.portCallId === call.id && e.payload.to === 'CANCELLED');
      expect(cascaded.map((e) => e.payload.from).sort()).toEqual(['CONFIRMED', 'REQUESTED']);
    });

    it('a call with an IN_PROGRESS order cannot be cancelled: 409 naming the order, nothing written', async () => {
      const call = (await post('/v1/port-calls', newCall())).body;
      const waiting = await newOrder(call.id);
      const working = await newOrder(call.id);
      for (const status of ['CONFIRMED', 'IN_PROGRESS']) await move(working, status);
      await expectRefused(
        () => post(`/v1/port-calls/${call.id}/status`, { status: 'CANCELLED' }),
        409,
        new RegExp(
          `cannot be cancelled while service order\\(s\\) ${working.split('/').pop()} are IN_PROGRESS`,
        ),
      );
      expect(await statusOf(waiting)).toBe('REQUESTED');
    });

    it('after the call departed, an order cannot be confirmed or started (409) but can still be completed, cancelled or rejected', async () => {
      const call = (
        await post('/v1/port-calls', newCall({ eta: '2026-01-10T06:00:00Z', etb: null, etd: null }))
      ).body;
      const requested = await newOrder(call.id);
      const confirmed = await newOrder(call.id);
      const started = await newOrder(call.id);
      const toReject = await newOrder(call.id);
      await move(confirmed, 'CONFIRMED');
      for (const status of ['CONFIRMED', 'IN_PROGRESS']) await move(started, status);
      for (const status of ['ARRIVED', 'BERTHED', 'DEPARTED'])
        expect((await post(`/v1/port-calls/${call.id}/status`, { status })).status).toBe(200);

      await expectRefused(
        () => move(requested, 'CONFIRMED'),
        409,
        new RegExp(`cannot go to CONFIRMED: its port call ${call.id} is DEPARTED`),
      );
      await expectRefused(
        () => move(confirmed, 'IN_PROGRESS'),
        409,
        new RegExp(`cannot go to IN_PROGRESS: its port call ${call.id} is DEPARTED`),
      );
      expect((await move(started, 'COMPLETED')).body.status).toBe('COMPLETED');
      expect((await move(confirmed, 'CANCELLED')).body.status).toBe('CANCELLED');
      expect((await move(toReject, 'REJECTED')).body.status).toBe('REJECTED');
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
      expect(await snapshot()).toEqual(before);
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
      await expectRefused(
        () => rest(server.url, `/v1/port-calls/${scheduled.id}`, { method: 'DELETE', key: analyst }),
        404,
        /PortCall/,
      );
      await expectRefused(
        () =>
          post(
            '/v1/service-orders',
            {
              portCallId: scheduled.id,
              serviceType: 'BUNKERING',
              vendorId: bunkerVendorHere,
              details: BUNKER,
            },
            analyst,
          ),
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
  describe('invoices bill completed work once', () => {
    const invoice = (over: Record<string, unknown> = {}) => ({
      vendorId: bunkerVendorSgsin,
      number: `B-${Math.random().toString(36).slice(2, 10)}`,
      currency: 'USD',
      dueDate: '2030-02-01',
      lines: [{ description: 'VLSFO', quantity: '500', unitPrice: '600.00' }],
      ...over,
    });
    const orderIn = async (statuses: string[]) => {
      const call = (await post('/v1/port-calls', newCall())).body;
      const order = await post('/v1/service-orders', {
        portCallId: call.id,
        serviceType: 'BUNKERING',
        vendorId: bunkerVendorSgsin,
        details: BUNKER,
      });
      for (const status of statuses) await post(`/v1/service-orders/${order.body.id}/status`, { status });
      return order.body.id as string;
    };
    const billing = (serviceOrderId: string) => [
      { description: 'VLSFO', quantity: '500', unitPrice: '600.00', serviceOrderId },
      { description: 'Barging', quantity: '1', unitPrice: '250.00', serviceOrderId },
    ];

    it('a line may bill only a COMPLETED order: REQUESTED, CANCELLED or REJECTED → 400', async () => {
      for (const statuses of [[], ['CANCELLED'], ['REJECTED'], ['CONFIRMED', 'IN_PROGRESS']]) {
        const id = await orderIn(statuses);
        await expectRefused(
          () => post('/v1/invoices', invoice({ lines: billing(id) })),
          400,
          new RegExp(
            `^lines\\[0\\]\\.serviceOrderId: service order ${id} is \\w+; only COMPLETED orders can be billed`,
          ),
        );
      }
    });

    it('an order is on at most one invoice that is not VOID; voiding frees it', async () => {
      const id = await orderIn(['CONFIRMED', 'IN_PROGRESS', 'COMPLETED']);
      const first = await post('/v1/invoices', invoice({ lines: billing(id) }));
      expect(first.status, JSON.stringify(first.body)).toBe(201);
      expect(first.body.serviceOrderIds).toEqual([id]);
      await expectRefused(
        () => post('/v1/invoices', invoice({ lines: billing(id) })),
        409,
        new RegExp(`service order ${id} is already billed on invoice ${first.body.id}`),
      );
      expect((await post(`/v1/invoices/${first.body.id}/status`, { status: 'VOID' })).body.status).toBe(
        'VOID',
      );
      const again = await post('/v1/invoices', invoice({ lines: billing(id) }));
      expect(again.status, JSON.stringify(again.body)).toBe(201);
    });

    it('the due date is a calendar date, not before the invoice date', async () => {
      const ok = await post('/v1/invoices', invoice({ dueDate: '2030-02-01' }));
      expect(ok.status).toBe(201);
      expect(ok.body.dueDate).toBe('2030-02-01T00:00:00.000Z');
      await expectRefused(
        () => post('/v1/invoices', invoice({ dueDate: '2030-02-01T10:30:00Z' })),
        400,
        /^dueDate: must be a calendar date YYYY-MM-DD; a date-time is accepted only at 00:00 UTC/,
      );
      await expectRefused(
        () => post('/v1/invoices', invoice({ dueDate: '2030-02-30' })),
        400,
        /^dueDate: must be a calendar date YYYY-MM-DD \(got '2030-02-30'\)/,
      );
      await expectRefused(
        () => post('/v1/invoices', invoice({ dueDate: '2020-01-01' })),
        400,
        /^dueDate: must not be before the invoice date \d{4}-\d{2}-\d{2} \(got 2020-01-01\)/,
      );
    });

    it('amounts are bounded so they fit their columns: a 46-digit quantity or price → 400; the largest allowed invoice is stored', async () => {
      const huge = '1'.repeat(46);
      await expectRefused(
        () =>
          post('/v1/invoices', invoice({ lines: [{ description: 'x', quantity: huge, unitPrice: '1.00' }] })),
        400,
        /^lines\[0\]\.quantity: must be at most 1000000000/,
      );
      await expectRefused(
        () =>
          post('/v1/invoices', invoice({ lines: [{ description: 'x', quantity: '1', unitPrice: huge }] })),
        400,
        /^lines\[0\]\.unitPrice: must be at most 1000000000/,
      );
      const largest = await post(
        '/v1/invoices',
        invoice({
          taxRate: '100',
          lines: Array.from({ length: 500 }, () => ({
            description: 'x',
            quantity: '1000000000',
            unitPrice: '1000000000.00',
          })),
        }),
      );
      expect(largest.status, JSON.stringify(largest.body)).toBe(201);
      expect(largest.body.total).toBe('1000000000000000000000.00');
      const read = await rest(server.url, `/v1/invoices/${largest.body.id}`, { key });
      expect(read.body.total).toBe('1000000000000000000000.00');
    });
  });

  describe('concurrent writes: exactly one wins, the rest are 409', () => {
    const together = <T>(n: number, run: () => Promise<T>) => Promise.all(Array.from({ length: n }, run));
    const historyRows = (subjectId: string, to: string) =>
      server.database.db.em().count(StatusChange, { subjectId, to });

    it('concurrent transitions of one port call: one 200, the rest 409, one history row', async () => {
      const call = (
        await post('/v1/port-calls', newCall({ eta: '2026-01-10T06:00:00Z', etb: null, etd: null }))
      ).body;
      const results = await together(6, () =>
        post(`/v1/port-calls/${call.id}/status`, { status: 'ARRIVED' }),
      );
      expect(results.map((r) => r.status).sort()).toEqual([200, 409, 409, 409, 409, 409]);
      for (const r of results.filter((x) => x.status === 409))
        expect(r.body.error.message).toMatch(
          /changed concurrently; reload and retry|cannot go from ARRIVED to ARRIVED/,
        );
      expect(await historyRows(call.id, 'ARRIVED')).toBe(1);
    });

    it('concurrent transitions of one service order and of one invoice: one winner each', async () => {
      const call = (await post('/v1/port-calls', newCall())).body;
      const order = (
        await post('/v1/service-orders', {
          portCallId: call.id,
          serviceType: 'BUNKERING',
          vendorId: bunkerVendorSgsin,
          details: BUNKER,
        })
      ).body;
      const moves = await together(6, () =>
        post(`/v1/service-orders/${order.id}/status`, { status: 'CONFIRMED' }),
      );
      expect(moves.map((r) => r.status).sort()).toEqual([200, 409, 409, 409, 409, 409]);
      expect(await historyRows(order.id, 'CONFIRMED')).toBe(1);

      const draft = (
        await post('/v1/invoices', {
          vendorId: bunkerVendorSgsin,
          number: `C-${Math.random().toString(36).slice(2, 10)}`,
          currency: 'USD',
          dueDate: '2030-02-01',
          lines: [{ description: 'x', quantity: '1', unitPrice: '1.00' }],
        })
      ).body;
      const issues = await together(6, () => post(`/v1/invoices/${draft.id}/status`, { status: 'ISSUED' }));
      expect(issues.map((r) => r.status).sort()).toEqual([200, 409, 409, 409, 409, 409]);
      expect(await historyRows(draft.id, 'ISSUED')).toBe(1);
      const issuedEvents = await server.database.db.em().find(EventRecord, { type: 'invoice.issued' });
      expect(issuedEvents.filter((e) => e.payload.invoiceId === draft.id)).toHaveLength(1);
    });

    it('new orders and a confirmation racing the cancellation of their call: every order left on it is cancelled, the refused ones are 409 naming the call', async () => {
      const orderOn = (call: Json) =>
        post('/v1/service-orders', {
          portCallId: call.id,
          serviceType: 'BUNKERING',
          vendorId: bunkerVendorSgsin,
          details: BUNKER,
        });
      for (let round = 0; round < 3; round++) {
        const call = (await post('/v1/port-calls', newCall())).body;
        const order = (await orderOn(call)).body;
        // The cancellation sent first, among the others, then last: on SQLite, which serializes the
        // writes in the order they arrive, each way round happens.
        const others = [
          () => post(`/v1/service-orders/${order.id}/status`, { status: 'CONFIRMED' }),
          ...Array.from({ length: 4 }, () => () => orderOn(call)),
        ];
        const cancel = () => post(`/v1/port-calls/${call.id}/status`, { status: 'CANCELLED' });
        const at = [0, 3, others.length][round]!;
        const sent = [...others.slice(0, at), cancel, ...others.slice(at)].map((send) => send());
        const cancelled = await sent.splice(at, 1)[0]!;
        const [confirmed, ...created] = await Promise.all(sent);
        expect(cancelled.status, JSON.stringify(cancelled.body)).toBe(200);
        expect([200, 409], JSON.stringify(confirmed!.body)).toContain(confirmed!.status);
        if (confirmed!.status === 409)
          expect(confirmed!.body.error.message).toMatch(
            /cannot go (from CANCELLED to CONFIRMED|to CONFIRMED: its port call .* is CANCELLED)/,
          );
        for (const r of created) {
          expect([201, 409], JSON.stringify(r.body)).toContain(r.status);
          if (r.status === 409)
            expect(r.body.error.message).toMatch(new RegExp(`^Port call ${call.id} is CANCELLED`));
        }
        const left = await rest(server.url, `/v1/service-orders?portCallId=${call.id}&limit=100`, { key });
        expect(left.body.data).toHaveLength(1 + created.filter((r) => r.status === 201).length);
        expect(new Set(left.body.data.map((o: Json) => o.status))).toEqual(new Set(['CANCELLED']));
      }
    });

    it('concurrent creates with one voyage reference or invoice number: one 201, the rest 409 naming the field', async () => {
      const voyageReference = `RACE-${Math.random().toString(36).slice(2, 8)}`;
      const calls = await together(5, () => post('/v1/port-calls', newCall({ voyageReference })));
      expect(calls.map((r) => r.status).sort()).toEqual([201, 409, 409, 409, 409]);
      for (const r of calls.filter((x) => x.status === 409))
        expect(r.body.error).toMatchObject({ details: { field: 'voyageReference' } });

      const number = `RACE-${Math.random().toString(36).slice(2, 8)}`;
      const invoices = await together(5, () =>
        post('/v1/invoices', {
          vendorId: bunkerVendorSgsin,
          number,
          currency: 'USD',
          dueDate: '2030-02-01',
          lines: [{ description: 'x', quantity: '1', unitPrice: '1.00' }],
        }),
      );
      expect(invoices.map((r) => r.status).sort()).toEqual([201, 409, 409, 409, 409]);
      for (const r of invoices.filter((x) => x.status === 409))
        expect(r.body.error.message).toBe(`Invoice number '${number}' already exists`);
    });

    it('concurrent invoices billing one order: exactly one is created', async () => {
      const call = (await post('/v1/port-calls', newCall())).body;
      const order = (
        await post('/v1/service-orders', {
          portCallId: call.id,
          serviceType: 'BUNKERING',
          vendorId: bunkerVendorSgsin,
          details: BUNKER,
        })
      ).body;
      for (const status of ['CONFIRMED', 'IN_PROGRESS', 'COMPLETED'])
        await post(`/v1/service-orders/${order.id}/status`, { status });
      const results = await together(5, () =>
        post('/v1/invoices', {
          vendorId: bunkerVendorSgsin,
          number: `D-${Math.random().toString(36).slice(2, 10)}`,
          currency: 'USD',
          dueDate: '2030-02-01',
          lines: [{ description: 'VLSFO', quantity: '500', unitPrice: '600.00', serviceOrderId: order.id }],
        }),
      );
      expect(results.map((r) => r.status).sort()).toEqual([201, 409, 409, 409, 409]);
      const invoices = await rest(server.url, `/v1/invoices?vendorId=${bunkerVendorSgsin}&limit=100`, {
        key,
      });
      expect(
        invoices.body.data.filter((i: Json) => i.serviceOrderIds.includes(order.id) && i.status !== 'VOID'),
      ).toHaveLength(1);
    });
  });
});
