import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeEachDialect } from '../helpers/env.js';
import { rowCounts } from '../fuzz/harness.js';
import { gql, rest, startTestServer, type Json, type TestServer } from '../helpers/server.js';

/**
 * The input rules, one case for each cause of a 5xx the fuzzer found, on both
 * databases: a 400 naming the field, and nothing written.
 */
describeEachDialect('input rules: hostile values get a 400 naming the field and write nothing', (dialect) => {
  let server: TestServer;
  let key: string;
  let portCallId: string;
  let vendorId: string;
  let webhookId: string;

  beforeAll(async () => {
    server = await startTestServer({ dialect });
    key = server.key('INSTITUTIONAL');
    portCallId = (await rest(server.url, '/v1/port-calls?status=SCHEDULED&limit=1', { key })).body.data[0].id;
    vendorId = (await rest(server.url, '/v1/vendors?limit=1', { key })).body.data[0].id;
    webhookId = (
      await rest(server.url, '/v1/webhooks', {
        key,
        method: 'POST',
        body: { url: 'http://127.0.0.1:9/rules', event_types: ['score_change'] },
      })
    ).body.endpoint.id;
  });
  afterAll(async () => server?.close());

  async function expectRefused(
    request: { method?: string; path: string; body?: unknown; raw?: string },
    field: string,
    message: RegExp,
  ) {
    const before = await rowCounts(server);
    const res = request.raw
      ? await fetch(`${server.url}${request.path}`, {
          method: request.method ?? 'POST',
          headers: { 'x-api-key': key, 'content-type': 'application/json' },
          body: request.raw,
        }).then(async (r) => ({ status: r.status, body: (await r.json()) as Json }))
      : await rest(server.url, request.path, { key, method: request.method, body: request.body });
    const context = `${request.method ?? 'GET'} ${request.path}: ${JSON.stringify(res.body)}`;
    expect(res.status, context).toBe(400);
    expect(res.body.error.code, context).toBe('BAD_USER_INPUT');
    expect(res.body.error.details?.field, context).toBe(field);
    expect(res.body.error.message, context).toMatch(message);
    expect(await rowCounts(server), context).toEqual(before);
  }

  const newCall = (overrides: Record<string, unknown>) => ({
    vesselImo: '9074729',
    portLocode: 'SGSIN',
    voyageReference: 'RULES-1',
    eta: '2027-01-10T08:00:00Z',
    ...overrides,
  });

  it('refuses NUL and control characters in text fields, REST and GraphQL', async () => {
    await expectRefused(
      { method: 'POST', path: '/v1/port-calls', body: newCall({ voyageReference: 'V\u0000X' }) },
      'voyageReference',
      /^voyageReference: must not contain the control character U\+0000$/,
    );
    await expectRefused(
      { method: 'PATCH', path: `/v1/port-calls/${portCallId}`, body: { agent: 'A\u0007gent' } },
      'agent',
      /U\+0007/,
    );
    await expectRefused(
      { method: 'PATCH', path: `/v1/vendors/${vendorId}`, body: { contactPhone: '+65\u0000' } },
      'contactPhone',
      /U\+0000/,
    );
    await expectRefused(
      { method: 'PATCH', path: `/v1/webhooks/${webhookId}`, body: { description: 'x\u0000' } },
      'description',
      /U\+0000/,
    );
    const before = await rowCounts(server);
    const res = await gql(
      server.url,
      'mutation($input: VendorInput!) { createVendor(input: $input) { id } }',
      { key, variables: { input: { name: 'Null\u0000 Marine', services: ['BUNKERING'], ports: ['SGSIN'] } } },
    );
    expect(res.body.errors?.[0]).toMatchObject({
      message: 'name: must not contain the control character U+0000',
      extensions: { code: 'BAD_USER_INPUT', field: 'name' },
    });
    expect(await rowCounts(server)).toEqual(before);
  });

  it('refuses unpaired surrogates in text and in the path', async () => {
    await expectRefused(
      { method: 'POST', path: '/v1/port-calls', body: newCall({ agent: 'Agent \ud800' }) },
      'agent',
      /not valid Unicode/,
    );
    await expectRefused({ path: '/v1/protocols/%ed%a0%80' }, 'path', /percent-encoded UTF-8/);
    await expectRefused({ path: `/v1/port-calls/${'x'.repeat(200)}` }, 'path', /longer than 100 characters/);
  });

  it('refuses dates outside 1900–2199 on both databases (year 0 and 275760 included)', async () => {
    for (const eta of ['0000-01-01T00:00:00Z', '+275760-09-13T00:00:00Z', '1899-12-31T23:59:59Z']) {
      await expectRefused(
        { method: 'POST', path: '/v1/port-calls', body: newCall({ eta }) },
        'eta',
        // The DateTimeISO scalar already refuses an expanded year (in graphql-js's words, naming
        // input.eta); the domain refuses the rest.
        /^eta: must lie between 1900-01-01 and 2199-12-31|"input\.eta"; DateTime cannot represent/,
      );
    }
    await expectRefused(
      {
        method: 'POST',
        path: `/v1/port-calls/${portCallId}/status`,
        body: { status: 'ARRIVED', at: '0000-01-01T00:00:00Z' },
      },
      'at',
      /^at: must lie between/,
    );
    await expectRefused(
      {
        method: 'POST',
        path: '/v1/service-orders',
        body: {
          portCallId,
          vendorId,
          serviceType: 'BUNKERING',
          details: { quantity: 500, unit: 'MT', fuelType: 'VLSFO' },
          requestedFor: '2200-01-01T00:00:00Z',
        },
      },
      'requestedFor',
      /^requestedFor: must lie between/,
    );
    await expectRefused(
      { path: '/v1/port-calls?etaFrom=0000-01-01T00:00:00Z' },
      'etaFrom',
      /must lie between/,
    );
    await expectRefused(
      { path: '/v1/analytics/vendor-spend?from=0000-01-01T00:00:00Z' },
      'from',
      /must lie between/,
    );
  });

  it('checks ids as UUIDs before any query', async () => {
    await expectRefused({ path: '/v1/documents?attachedId=x' }, 'attachedId', /^attachedId: must be a UUID/);
  });

  it('refuses nested arrays where a scalar or a list of strings belongs, naming the field', async () => {
    await expectRefused(
      {
        method: 'POST',
        path: '/v1/service-orders',
        body: {
          portCallId,
          vendorId,
          serviceType: 'BUNKERING',
          details: { quantity: [[[500]]], unit: 'MT', fuelType: 'VLSFO' },
        },
      },
      'details.quantity',
      /^details\.quantity: must be a number greater than 0 \(got an array\)$/,
    );
    await expectRefused(
      { method: 'POST', path: '/v1/watchlist', body: { add: [['aqueduct-water']] } },
      'add',
      /list of strings/,
    );
    await expectRefused(
      { method: 'PATCH', path: `/v1/webhooks/${webhookId}`, body: { event_types: [[['score_change']]] } },
      'event_types',
      /list of strings/,
    );
  });

  it('bounds JSON nesting in the body parser and names prototype keys', async () => {
    await expectRefused(
      { method: 'POST', path: '/v1/watchlist', raw: `{"add":${'['.repeat(5000)}${']'.repeat(5000)}}` },
      'body',
      /^body: nests arrays or objects deeper than 32 levels$/,
    );
    await expectRefused(
      { method: 'POST', path: '/v1/watchlist', raw: '{"add":["aqueduct-water"],"__proto__":{"admin":true}}' },
      'body',
      /__proto__/,
    );
  });

  it('accepts Content-Type: application/json with no body on bodiless requests', async () => {
    const bodiless = (method: string, path: string) =>
      fetch(`${server.url}${path}`, {
        method,
        headers: { 'x-api-key': key, 'content-type': 'application/json' },
      });
    expect((await bodiless('GET', `/v1/port-calls/${portCallId}`)).status).toBe(200);
    const created = await rest(server.url, '/v1/port-calls', {
      key,
      method: 'POST',
      body: newCall({ voyageReference: 'GONE-1' }),
    });
    expect(created.status).toBe(201);
    expect((await bodiless('DELETE', `/v1/port-calls/${created.body.id}`)).status).toBe(204);
    const rotated = await bodiless('POST', `/v1/webhooks/${webhookId}/rotate-secret`);
    expect(rotated.status).toBe(200);
    // A route that needs a body still says so, naming it.
    const missing = await bodiless('POST', '/v1/port-calls');
    expect(missing.status).toBe(400);
    expect(((await missing.json()) as Json).error.message).toMatch(
      /^input: is required \(JSON request body\)$/,
    );
  });
});
