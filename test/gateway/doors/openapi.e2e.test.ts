import { readFileSync } from 'node:fs';
import { Validator } from '@seriousme/openapi-schema-validator';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AccessPolicy } from '../../../src/gateway/pipeline/access.js';
import { OPENAPI_FILE, gatewayOpenApi, printOpenApi, type Json } from '../../../src/gateway/doors/openapi.js';
import { MODULES, gatewaySchema } from '../../../src/modules.js';
import { systemClock } from '../../../src/kernel/clock.js';
import { registerClient } from '../../auth/helpers.js';
import { startReceiver, type Receiver } from '../../events/helpers.js';
import { rest, startTestServer, type TestServer } from '../../helpers/server.js';

// ajv-formats is CommonJS: under ESM its plugin is the default export's `default`; its types
// describe the CommonJS shape, hence the cast.
const addFormats = (addFormatsModule as unknown as { default: (ajv: Ajv2020) => Ajv2020 }).default;

type Operation = { responses: Record<string, Json>; requestBody?: Json; security?: unknown[] };
const document = JSON.parse(readFileSync(OPENAPI_FILE, 'utf8')) as {
  openapi: string;
  paths: Record<string, Record<string, Operation>>;
  components: { responses: Record<string, Json> };
};

/** Every documented (method, path) pair, as `GET /v1/protocols/{slug}`. */
const documented = Object.entries(document.paths).flatMap(([path, ops]) =>
  Object.keys(ops).map((m) => `${m.toUpperCase()} ${path}`),
);

/**
 * Routes whose success needs what this suite does not set up; each is still checked with an
 * error answer. Upload content (multipart and signed PUT) is covered by test/port-ops/documents.
 */
const NO_SUCCESS_HERE = new Set([
  'POST /v1/documents',
  'PUT /v1/documents/uploads',
  'GET /v1/documents/{id}',
  'GET /oauth/authorize',
  'GET /oauth/userinfo',
  'POST /v1/webhooks/{id}/deliveries/{deliveryId}/redeliver',
  'POST /v1/webhook-subscriptions/{id}/deliveries/{deliveryId}/redeliver',
  'GET /v1/webhooks/{id}/deliveries/{deliveryId}',
  'GET /v1/webhook-subscriptions/{id}/deliveries/{deliveryId}',
]);

describe('the OpenAPI document', () => {
  it('is valid OpenAPI 3.1 (checked by @seriousme/openapi-schema-validator)', async () => {
    const result = await new Validator().validate(
      structuredClone(document) as unknown as Record<string, unknown>,
    );
    expect(result.errors ?? [], JSON.stringify(result.errors, null, 2)).toEqual([]);
    expect(result.valid).toBe(true);
    expect(document.openapi).toBe('3.1.0');
  });

  it('is fresh: schema/openapi.json is what the code generates (run `npm run schema`)', () => {
    const schema = gatewaySchema();
    expect(readFileSync(OPENAPI_FILE, 'utf8')).toBe(
      printOpenApi(gatewayOpenApi(schema, new AccessPolicy(schema), MODULES)),
    );
  });

  it('documents every REST route the server has, with security schemes for keys and OAuth', () => {
    expect(documented).toContain('GET /v1/protocols/{slug}');
    expect(documented).toContain('POST /oauth/token');
    expect(documented).toContain('GET /v1/export');
    const schemes = (document.components as { securitySchemes?: Record<string, Json> }).securitySchemes!;
    expect(Object.keys(schemes)).toEqual(['apiKey', 'bearer', 'oauth2']);
    expect(Object.keys((schemes.oauth2!.flows as Json) ?? {})).toEqual([
      'authorizationCode',
      'clientCredentials',
    ]);
  });
});

describe('live answers match the OpenAPI document', () => {
  let server: TestServer;
  let receiver: Receiver;
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats(ajv);
  ajv.addSchema(document as object, 'openapi');
  const compiled = new Map<string, ValidateFunction>();
  const successes = new Set<string>();
  const errors = new Set<string>();

  function templateOf(method: string, path: string): string {
    const bare = path.split('?')[0]!.replace(/^\/api(?=\/v1\/)/, '');
    for (const template of Object.keys(document.paths)) {
      const pattern = new RegExp(`^${template.replace(/\{\w+\}/g, '[^/]+')}$`);
      if (pattern.test(bare) && document.paths[template]![method.toLowerCase()]) return template;
    }
    throw new Error(`${method} ${bare} is not documented`);
  }

  function validator(pointer: string): ValidateFunction {
    let fn = compiled.get(pointer);
    if (!fn) {
      fn = ajv.compile({ $ref: `openapi#${pointer}` });
      compiled.set(pointer, fn);
    }
    return fn;
  }

  const escape = (s: string) => s.replace(/~/g, '~0').replace(/\//g, '~1');

  /** Calls the server and checks the answer (and a JSON request body) against the document. */
  async function call(
    method: string,
    path: string,
    options: { key?: string; body?: unknown; form?: Record<string, string>; expect?: number } = {},
  ): Promise<{ status: number; body: Json & Json[] }> {
    const template = templateOf(method, path);
    const m = method.toLowerCase();
    const base = `/paths/${escape(template)}/${m}`;
    const operation = document.paths[template]![m]!;
    // A body meant to be refused is not checked against the schema it breaks.
    if (options.body !== undefined && (options.expect ?? 200) < 300) {
      const check = validator(`${base}/requestBody/content/application~1json/schema`);
      expect(
        check(options.body),
        `request body of ${method} ${template}: ${ajv.errorsText(check.errors)}`,
      ).toBe(true);
    }
    const res = options.form
      ? await fetch(`${server.url}${path}`, {
          method,
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body: new URLSearchParams(options.form).toString(),
        })
      : await rest(server.url, path, { method, key: options.key, body: options.body }).then((r) => ({
          status: r.status,
          headers: r.headers,
          text: async () => r.text,
        }));
    const text = await res.text();
    const status = String(res.status);
    if (options.expect !== undefined) expect(res.status, text).toBe(options.expect);
    const described = operation.responses[status];
    expect(
      described,
      `${method} ${template} answered ${status}, which is not documented: ${text}`,
    ).toBeDefined();
    const ref = described!.$ref as string | undefined;
    const response = ref ? document.components.responses[ref.split('/').pop()!]! : described!;
    const pointer = ref ? `/components/responses/${ref.split('/').pop()}` : `${base}/responses/${status}`;
    const content = (response.content ?? {}) as Record<string, Json>;
    const type = (res.headers.get('content-type') ?? '').split(';')[0]!;
    let body = null as never as Json & Json[];
    if (Object.keys(content).length === 0) {
      if (res.status !== 302) expect(text, `${method} ${template} ${status} documents no body`).toBe('');
    } else {
      expect(Object.keys(content), `${method} ${template} ${status} answered ${type}`).toContain(type);
    }
    if (type === 'application/json' && content[type]?.schema) {
      body = JSON.parse(text) as Json & Json[];
      const check = validator(`${pointer}/content/application~1json/schema`);
      expect(
        check(body),
        `${method} ${template} ${status}: ${ajv.errorsText(check.errors)}\n${text.slice(0, 500)}`,
      ).toBe(true);
    }
    (res.status < 300 ? successes : errors).add(`${method} ${template}`);
    return { status: res.status, body };
  }

  beforeAll(async () => {
    server = await startTestServer();
    receiver = await startReceiver();
  });
  afterAll(async () => {
    await server?.close();
    await receiver?.close();
  });

  it('serves the checked-in document at /openapi.json', async () => {
    const res = await fetch(`${server.url}/openapi.json`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    expect(await res.text()).toBe(readFileSync(OPENAPI_FILE, 'utf8'));
  });

  it('liquidity routes', async () => {
    const key = server.key('INSTITUTIONAL');
    const protocols = await call('GET', '/v1/protocols?limit=3', { key, expect: 200 });
    const slug = String(protocols.body[0]!.slug);
    await call('GET', `/v1/protocols/${slug}`, { key, expect: 200 });
    await call('GET', '/v1/protocols/no-such-protocol', { key, expect: 404 });
    const scores = await call('GET', '/v1/scores?limit=2', { key, expect: 200 });
    await call('GET', `/v1/scores/${slug}/history`, { key, expect: 200 });
    await call('GET', `/v1/audits/${String(scores.body[0]!.audit_id)}`, { key, expect: 200 });
    await call('GET', '/v1/backtest?lookback=30', { key, expect: 200 });
    await call('GET', '/v1/backtest?lookback=abc', { key, expect: 400 });
    await call('GET', '/v1/market', { key, expect: 200 });
    await call('POST', '/v1/watchlist', { key, body: { add: [slug], tier_shift: true }, expect: 200 });
    await call('GET', '/v1/watchlist', { key, expect: 200 });
    await call('GET', '/v1/watchlist/alerts', { key, expect: 200 });
    await call('DELETE', `/v1/watchlist/${slug}`, { key, expect: 204 });
    const profile = await call('POST', '/v1/scoring-profiles', {
      key,
      body: {
        name: 'OpenAPI profile',
        weights: { aum: 0.2, redemption: 0.2, volume: 0.2, issuer: 0.2, jurisdiction: 0.2 },
      },
      expect: 201,
    });
    await call('GET', '/v1/scoring-profiles', { key, expect: 200 });
    await call('PUT', `/v1/scoring-profiles/${String(profile.body.id)}`, {
      key,
      body: { name: 'Renamed' },
      expect: 200,
    });
    await call('DELETE', `/v1/scoring-profiles/${String(profile.body.id)}`, { key, expect: 204 });
    await call('GET', '/v1/export?format=json', { key, expect: 200 });
    await call('GET', '/v1/protocols', { key: server.key('OBSERVER') });
  });

  it('port-operations routes', async () => {
    const key = server.key('INSTITUTIONAL');
    await call('GET', '/v1/vessels/lookup?imo=9074729', { key, expect: 200 });
    await call('GET', '/v1/ports', { key, expect: 200 });
    const calls = await call('GET', '/v1/port-calls?limit=5', { key, expect: 200 });
    await call('GET', '/v1/dashboard/port-calls?limit=2', { key, expect: 200 });
    const existing = (calls.body.data as unknown as Json[])[0]!;
    await call('GET', `/v1/port-calls/${String(existing.id)}`, { key, expect: 200 });
    await call('GET', `/v1/predictions/port-calls/${String(existing.id)}`, { key, expect: 200 });
    const eta = new Date(Date.now() + 86_400_000).toISOString();
    const created = await call('POST', '/v1/port-calls', {
      key,
      body: { vesselImo: '9321483', portLocode: 'SGSIN', voyageReference: 'OPENAPI-1', eta },
      expect: 201,
    });
    const id = String(created.body.id);
    await call('PATCH', `/v1/port-calls/${id}`, { key, body: { agent: 'Harbour Agency' }, expect: 200 });
    const vendor = await call('POST', '/v1/vendors', {
      key,
      body: {
        name: 'OpenAPI Towage',
        services: ['TOWAGE'],
        ports: ['SGSIN'],
        contactEmail: 'ops@towage.example',
      },
      expect: 201,
    });
    const vendorId = String(vendor.body.id);
    await call('GET', '/v1/vendors', { key, expect: 200 });
    await call('GET', `/v1/vendors/${vendorId}`, { key, expect: 200 });
    await call('PATCH', `/v1/vendors/${vendorId}`, {
      key,
      body: { contactEmail: 'desk@towage.example' },
      expect: 200,
    });
    const order = await call('POST', '/v1/service-orders', {
      key,
      body: { portCallId: id, serviceType: 'TOWAGE', vendorId, details: { tugs: 2 } },
      expect: 201,
    });
    await call('GET', '/v1/service-orders', { key, expect: 200 });
    await call('GET', `/v1/service-orders/${String(order.body.id)}`, { key, expect: 200 });
    await call('POST', `/v1/service-orders/${String(order.body.id)}/status`, {
      key,
      body: { status: 'CONFIRMED' },
      expect: 200,
    });
    const invoice = await call('POST', '/v1/invoices', {
      key,
      body: {
        vendorId,
        number: 'OA-0001',
        currency: 'USD',
        dueDate: '2030-02-01T00:00:00Z',
        lines: [{ description: 'Towage', quantity: '1', unitPrice: '1200.00' }],
      },
      expect: 201,
    });
    await call('GET', '/v1/invoices', { key, expect: 200 });
    await call('GET', `/v1/invoices/${String(invoice.body.id)}`, { key, expect: 200 });
    await call('POST', `/v1/invoices/${String(invoice.body.id)}/status`, {
      key,
      body: { status: 'ISSUED' },
      expect: 200,
    });
    await call('POST', `/v1/port-calls/${id}/status`, { key, body: { status: 'ARRIVED' }, expect: 200 });
    await call('GET', '/v1/documents', { key, expect: 200 });
    await call('GET', '/v1/documents/00000000-0000-4000-8000-000000000000', { key, expect: 404 });
    await call('GET', '/v1/documents/00000000-0000-4000-8000-000000000000/content', { key, expect: 404 });
    // Content is served with the type it was stored as: a text upload comes back text/plain.
    const upload = new FormData();
    for (const [name, value] of Object.entries({ kind: 'OTHER', attachedType: 'PORT_CALL', attachedId: id }))
      upload.append(name, value);
    upload.append('file', new Blob(['berth 4, 06:00'], { type: 'text/plain' }), 'note.txt');
    const stored = await fetch(`${server.url}/v1/documents`, {
      method: 'POST',
      headers: { 'x-api-key': key },
      body: upload,
    });
    expect(stored.status).toBe(201);
    const documentId = ((await stored.json()) as Json).id as string;
    await call('GET', `/v1/documents/${documentId}/content`, { key, expect: 200 });
    await call('POST', '/v1/documents', { key });
    await call('PUT', '/v1/documents/uploads?token=bad', {});
    for (const path of ['turnaround', 'bunker-volumes', 'vendor-performance', 'vendor-spend'])
      await call('GET', `/v1/analytics/${path}`, { key, expect: 200 });
    await call('GET', '/v1/predictions/bunker-demand?portLocode=SGSIN', { key, expect: 200 });
    const doomed = await call('POST', '/v1/port-calls', {
      key,
      body: { vesselImo: '9321483', portLocode: 'SGSIN', voyageReference: 'OPENAPI-2', eta },
      expect: 201,
    });
    await call('DELETE', `/v1/port-calls/${String(doomed.body.id)}`, { key, expect: 204 });
    await call('POST', '/v1/port-calls', { key, body: { vesselImo: '9321483' }, expect: 400 });
  });

  it('webhook routes, both doors', async () => {
    const key = server.key('INSTITUTIONAL');
    for (const [door, body] of [
      ['/v1/webhooks', { url: receiver.url, event_types: ['tier_change'] }],
      ['/v1/webhook-subscriptions', { url: receiver.url, eventTypes: ['port_call.created'] }],
    ] as const) {
      const created = await call('POST', door, { key, body, expect: 201 });
      const id = String((created.body.endpoint as Json).id);
      await call('GET', door, { key, expect: 200 });
      await call('GET', `${door}/${id}`, { key, expect: 200 });
      await call('PATCH', `${door}/${id}`, { key, body: { url: `${receiver.url}?v=2` }, expect: 200 });
      await call('POST', `${door}/${id}/rotate-secret`, { key, expect: 200 });
      await call('POST', `${door}/${id}/enable`, { key, expect: 200 });
      await call('GET', `${door}/${id}/deliveries`, { key, expect: 200 });
      await call('GET', `${door}/${id}/deliveries/00000000-0000-4000-8000-000000000000`, {
        key,
        expect: 404,
      });
      await call('POST', `${door}/${id}/deliveries/00000000-0000-4000-8000-000000000000/redeliver`, {
        key,
        expect: 404,
      });
      await call('DELETE', `${door}/${id}`, { key, expect: 204 });
    }
  });

  it('OAuth endpoints', async () => {
    for (const path of [
      '/.well-known/jwks.json',
      '/.well-known/oauth-authorization-server',
      '/.well-known/openid-configuration',
    ])
      await call('GET', path, { expect: 200 });
    await call('POST', '/oauth/token', { form: { grant_type: 'password' }, expect: 401 });
    const registered = await registerClient(server, systemClock, {
      accountId: server.demo.accounts[0]!.accountId,
      scopes: 'read:vessels',
      grantTypes: 'client_credentials',
    });
    const form = { client_id: registered.client_id, client_secret: registered.client_secret! };
    const token = await call('POST', '/oauth/token', {
      form: { ...form, grant_type: 'client_credentials' },
      expect: 200,
    });
    await call('POST', '/oauth/introspect', { form: { ...form, token: String(token.body.access_token) } });
    await call('POST', '/oauth/revoke', {
      form: { ...form, token: String(token.body.access_token) },
      expect: 200,
    });
    await call('POST', '/oauth/revoke', { form: { token: 'x' }, expect: 401 });
    await call('GET', '/oauth/userinfo', { expect: 401 });
    await call('GET', '/oauth/authorize?client_id=nope&response_type=code', { expect: 400 });
    await call('POST', '/oauth/introspect', { form: { token: 'x' }, expect: 401 });
  });

  it('every documented route answered a success and an error that match the document', async () => {
    // An error for every route: without credentials where it wants them, else a bad request.
    for (const entry of documented) {
      if (errors.has(entry)) continue;
      const [method, template] = entry.split(' ') as [string, string];
      const path = template.replace(/\{\w+\}/g, '00000000-0000-4000-8000-000000000000');
      const operation = document.paths[template]![method.toLowerCase()]!;
      // 401, or 400 where the route checks its parameters first: either way a documented error.
      if ((operation.security ?? []).length > 0)
        expect((await call(method, path)).status).toBeGreaterThanOrEqual(400);
    }
    // Exactly the listed routes lack a success here: the list cannot go stale.
    const missingSuccess = documented.filter((e) => !successes.has(e)).sort();
    // Public metadata has no error answer to give.
    const missingError = documented.filter((e) => !errors.has(e) && !e.startsWith('GET /.well-known/'));
    expect(missingSuccess).toEqual([...NO_SUCCESS_HERE].sort());
    expect(missingError).toEqual([]);
  });
});
