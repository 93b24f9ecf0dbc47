import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { WebhookDomain } from '../../src/events/catalog.js';
import {
  EventRecord,
  WebhookDelivery,
  WebhookDeliveryAttempt,
  WebhookDeliveryStatus,
  WebhookEndpoint,
  WebhookEndpointStatus,
} from '../../src/events/entities.js';
import { MAX_IN_FLIGHT_PER_ENDPOINT, WebhookOutbox } from '../../src/events/outbox.js';
import { MAX_ENDPOINTS_PER_DOMAIN } from '../../src/events/webhooks.js';
import { resealLegacySecrets } from '../../src/events/secrets.js';
import { verifySignature } from '../../src/events/signature.js';
import { stageEvents } from '../../src/events/stage.js';
import { changePlan } from '../../src/accounts/service.js';
import { HOUR, ManualClock } from '../../src/kernel/clock.js';
import { Plan } from '../../src/kernel/plans.js';
import { describeEachDialect } from '../helpers/env.js';
import { createKey, gql, rest, startTestServer, type TestServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';
import { commitEvents, scoreChange, startReceiver, tierChange, type Receiver } from './helpers.js';

async function count(
  server: TestServer,
  entity: typeof WebhookEndpoint | typeof WebhookDelivery,
): Promise<number> {
  return server.database.db.em().count(entity, {});
}

/** Deliveries retry on a backoff of seconds: a longer deadline than waitFor's default. */
const until = <T>(read: () => Promise<T>, done: (value: T) => boolean, what: string): Promise<T> =>
  waitFor(read, done, { what, timeoutMs: 15_000 });

/** Every column of the stored endpoint rows, as the database holds them. */
async function storedEndpointRows(server: TestServer): Promise<string> {
  const rows = await server.database.db.em().getConnection().execute('select * from webhook_endpoints');
  return JSON.stringify(rows);
}

describeEachDialect('webhooks', (dialect) => {
  let server: TestServer;
  let receiver: Receiver;
  beforeAll(async () => {
    server = await startTestServer({
      dialect,
      env: { WEBHOOK_RETRY_BASE: '1s', WEBHOOK_MAX_ATTEMPTS: '3', WEBHOOK_TIMEOUT: '2s' },
    });
    receiver = await startReceiver();
  });
  afterAll(async () => {
    await server?.close();
    await receiver?.close();
  });
  afterEach(async () => {
    receiver.respond = () => 200;
    receiver.received.length = 0;
    await server.database.db.em().nativeDelete(WebhookEndpoint, {});
  });

  async function register(
    path = '/v1/webhooks',
    eventTypes = ['tier_change', 'score_change'],
    key = server.key('PROFESSIONAL'),
  ) {
    const body =
      path === '/v1/webhooks'
        ? { url: receiver.url, event_types: eventTypes, description: 'test' }
        : { url: receiver.url, eventTypes, description: 'test' };
    const res = await rest(server.url, path, { method: 'POST', key, body });
    expect(res.status, res.text).toBe(201);
    return res.body as { secret: string; endpoint: { id: string; status: string } };
  }

  it('registers a liquidity endpoint, shows the secret once, stores it sealed, and lists it as a bare array', async () => {
    const created = await register();
    expect(created.secret).toMatch(/^whsec_/);
    expect(created.endpoint).toMatchObject({
      url: receiver.url,
      event_types: ['score_change', 'tier_change'],
      status: 'ACTIVE',
      secret_prefix: created.secret.slice(0, 12),
      previous_secret_expires_at: null,
    });
    const list = await rest(server.url, '/v1/webhooks?limit=10', { key: server.key('PROFESSIONAL') });
    expect(list.status).toBe(200);
    expect(Array.isArray(list.body)).toBe(true);
    expect(list.body.map((e: { id: string }) => e.id)).toEqual([created.endpoint.id]);
    expect(list.text).not.toContain(created.secret);
    const one = await rest(server.url, `/v1/webhooks/${created.endpoint.id}`, {
      key: server.key('PROFESSIONAL'),
    });
    expect(one.body).toMatchObject({ id: created.endpoint.id, event_types: ['score_change', 'tier_change'] });

    // At rest: sealed with the secret box; neither the secret nor its random part is in the row.
    const stored = await server.database.db.em().findOneOrFail(WebhookEndpoint, { id: created.endpoint.id });
    expect(stored.secret).toMatch(/^sb1\./);
    expect(server.app.services.secrets.open(stored.secret)).toBe(created.secret);
    const rows = await storedEndpointRows(server);
    expect(rows).not.toContain(created.secret.slice('whsec_'.length));
  });

  it('refuses liquidity webhooks below Professional with 402 PLAN_REQUIRED on every /v1/webhooks route, changing nothing', async () => {
    const res = await rest(server.url, '/v1/webhooks', {
      method: 'POST',
      key: server.key('ANALYST'),
      body: { url: receiver.url, event_types: ['tier_change'] },
    });
    expect(res.status).toBe(402);
    expect(res.body.error.code).toBe('PLAN_REQUIRED');
    expect(await count(server, WebhookEndpoint)).toBe(0);

    const { endpoint } = await register('/v1/webhooks', ['tier_change']);
    const before = await storedEndpointRows(server);
    // The plan gate is on every field of the door, checked before any data is looked at.
    const delivery = '00000000-0000-4000-8000-000000000000';
    for (const [method, path, body] of [
      ['GET', '/v1/webhooks', undefined],
      ['GET', `/v1/webhooks/${endpoint.id}`, undefined],
      ['PATCH', `/v1/webhooks/${endpoint.id}`, { active: false }],
      ['DELETE', `/v1/webhooks/${endpoint.id}`, undefined],
      ['POST', `/v1/webhooks/${endpoint.id}/enable`, undefined],
      ['POST', `/v1/webhooks/${endpoint.id}/rotate-secret`, undefined],
      ['GET', `/v1/webhooks/${endpoint.id}/deliveries`, undefined],
      ['GET', `/v1/webhooks/${endpoint.id}/deliveries/${delivery}`, undefined],
      ['POST', `/v1/webhooks/${endpoint.id}/deliveries/${delivery}/redeliver`, undefined],
    ] as const) {
      const denied = await rest(server.url, path, { method, key: server.key('ANALYST'), body });
      expect(denied.status, `${method} ${path}`).toBe(402);
      expect(denied.body.error.code).toBe('PLAN_REQUIRED');
    }
    expect(await storedEndpointRows(server)).toBe(before);
  });

  it('requires webhooks:manage for port-ops subscriptions (403) and writes nothing', async () => {
    const { secret } = await createKey(server, { plan: 'ANALYST', scopes: 'read:port_calls' });
    const res = await rest(server.url, '/v1/webhook-subscriptions', {
      method: 'POST',
      key: secret,
      body: { url: receiver.url, eventTypes: ['port_call.created'] },
    });
    expect(res.status).toBe(403);
    expect(res.body.error.message).toMatch(/webhooks:manage/);
    expect(await count(server, WebhookEndpoint)).toBe(0);
  });

  it('requires the read scope of every requested event type, at registration and update, naming the missing ones', async () => {
    const { secret } = await createKey(server, {
      plan: 'ANALYST',
      scopes: 'webhooks:manage read:port_calls',
    });
    const refused = await rest(server.url, '/v1/webhook-subscriptions', {
      method: 'POST',
      key: secret,
      body: { url: receiver.url, eventTypes: ['port_call.created', 'invoice.issued', 'document.uploaded'] },
    });
    expect(refused.status).toBe(403);
    expect(refused.body.error).toMatchObject({
      code: 'FORBIDDEN',
      details: { requiredScopes: ['read:invoices', 'read:documents'] },
    });
    expect(refused.body.error.message).toMatch(/Missing required scopes: read:invoices, read:documents/);
    expect(await count(server, WebhookEndpoint)).toBe(0);

    const viaGraphql = await gql(
      server.url,
      'mutation($input: WebhookEndpointInput!) { createWebhookSubscription(input: $input) { secret } }',
      { key: secret, variables: { input: { url: receiver.url, eventTypes: ['service_order.created'] } } },
    );
    expect(viaGraphql.body.errors?.[0]?.extensions).toMatchObject({
      code: 'FORBIDDEN',
      requiredScopes: ['read:service_orders'],
    });
    expect(await count(server, WebhookEndpoint)).toBe(0);

    const { endpoint } = await register('/v1/webhook-subscriptions', ['port_call.created'], secret);
    const widened = await rest(server.url, `/v1/webhook-subscriptions/${endpoint.id}`, {
      method: 'PATCH',
      key: secret,
      body: { eventTypes: ['port_call.created', 'invoice.issued'] },
    });
    expect(widened.status).toBe(403);
    expect(widened.body.error.details.requiredScopes).toEqual(['read:invoices']);
    const stored = await server.database.db.em().findOneOrFail(WebhookEndpoint, { id: endpoint.id });
    expect(stored.eventTypes).toEqual(['port_call.created']);

    // Liquidity types are protected the same way, by read:liquidity.
    const { secret: noLiquidity } = await createKey(server, {
      plan: 'PROFESSIONAL',
      scopes: 'webhooks:manage',
    });
    const liquidity = await rest(server.url, '/v1/webhooks', {
      method: 'POST',
      key: noLiquidity,
      body: { url: receiver.url, event_types: ['tier_change'] },
    });
    expect(liquidity.status).toBe(403);
    expect(liquidity.body.error.details.requiredScopes).toEqual(['read:liquidity']);
    expect(await count(server, WebhookEndpoint)).toBe(1);
  });

  it('rejects unknown or wrong-domain event types, missing fields and bad URLs with 400 naming the field', async () => {
    const cases: Array<[string, Record<string, unknown>, RegExp]> = [
      [
        '/v1/webhooks',
        { url: receiver.url, event_types: ['port_call.created'] },
        /eventTypes: unknown event type port_call\.created/,
      ],
      [
        '/v1/webhooks',
        { url: receiver.url, event_types: [] },
        /event_types: is required|eventTypes: must name at least one/,
      ],
      ['/v1/webhooks', { event_types: ['tier_change'] }, /url: is required/],
      [
        '/v1/webhooks',
        { url: 'ftp://example.com/x', event_types: ['tier_change'] },
        /url: must use http or https/,
      ],
      [
        '/v1/webhooks',
        { url: 'not a url', event_types: ['tier_change'] },
        /url: 'not a url' is not an absolute URL/,
      ],
      [
        '/v1/webhooks',
        { url: 'http://user:pw@127.0.0.1/x', event_types: ['tier_change'] },
        /url: must not contain credentials/,
      ],
      [
        '/v1/webhook-subscriptions',
        { url: receiver.url, eventTypes: ['tier_change'] },
        /eventTypes: unknown event type tier_change/,
      ],
      // Port-operations bodies are camelCase, like the rest of that API.
      [
        '/v1/webhook-subscriptions',
        { url: receiver.url, event_types: ['port_call.created'] },
        /Field "event_types" is not defined|Field "eventTypes" of required type/,
      ],
      [
        '/v1/webhooks',
        { url: receiver.url, event_types: ['tier_change'], description: 'x'.repeat(201) },
        /description: must be at most 200 characters/,
      ],
      [
        '/v1/webhooks',
        { url: `${receiver.url}?${'q'.repeat(2048)}`, event_types: ['tier_change'] },
        /url: must be at most 2048 characters/,
      ],
      [
        '/v1/webhooks',
        { url: 'https://no-such-host.invalid/hook', event_types: ['tier_change'] },
        /url: host 'no-such-host\.invalid' does not resolve/,
      ],
    ];
    for (const [path, body, message] of cases) {
      const res = await rest(server.url, path, { method: 'POST', key: server.key('PROFESSIONAL'), body });
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.error.code).toBe('BAD_USER_INPUT');
      expect(res.body.error.message).toMatch(message);
    }
    expect(await count(server, WebhookEndpoint)).toBe(0);
  });

  it('refuses the endpoint past the per-account limit with 409, writing nothing', async () => {
    const key = server.key('INSTITUTIONAL');
    const accountId = server.demo.accounts.find((a) => a.plan === 'INSTITUTIONAL')!.accountId;
    const mine = () =>
      server.database.db.em().count(WebhookEndpoint, { accountId, domain: WebhookDomain.LIQUIDITY });
    while ((await mine()) < MAX_ENDPOINTS_PER_DOMAIN) {
      const res = await rest(server.url, '/v1/webhooks', {
        method: 'POST',
        key,
        body: { url: receiver.url, event_types: ['tier_change'] },
      });
      expect(res.status, res.text).toBe(201);
    }
    const refused = await rest(server.url, '/v1/webhooks', {
      method: 'POST',
      key,
      body: { url: receiver.url, event_types: ['tier_change'] },
    });
    expect(refused.status).toBe(409);
    expect(refused.body.error).toMatchObject({
      code: 'CONFLICT',
      details: { limit: MAX_ENDPOINTS_PER_DOMAIN },
    });
    expect(await mine()).toBe(MAX_ENDPOINTS_PER_DOMAIN);
  });

  it('serves port-ops subscriptions in camelCase: register, list with an envelope, get one, and PATCH url, eventTypes and active', async () => {
    const key = server.key('ANALYST');
    const created = await rest(server.url, '/v1/webhook-subscriptions', {
      method: 'POST',
      key,
      body: { url: receiver.url, eventTypes: ['port_call.created'] },
    });
    expect(created.status, created.text).toBe(201);
    expect(created.body.endpoint).toMatchObject({
      url: receiver.url,
      eventTypes: ['port_call.created'],
      status: 'ACTIVE',
      secretPrefix: created.body.secret.slice(0, 12),
    });
    const id = created.body.endpoint.id as string;
    const list = await rest(server.url, '/v1/webhook-subscriptions?limit=5', { key });
    expect(list.body).toMatchObject({ total: 1, limit: 5, offset: 0, data: [{ id }] });
    expect((await rest(server.url, `/v1/webhook-subscriptions/${id}`, { key })).body).toMatchObject({
      id,
      eventTypes: ['port_call.created'],
    });

    const other = await startReceiver();
    try {
      const patched = await rest(server.url, `/v1/webhook-subscriptions/${id}`, {
        method: 'PATCH',
        key,
        body: { url: other.url, eventTypes: ['port_call.status_changed', 'invoice.issued'], active: false },
      });
      expect(patched.status, patched.text).toBe(200);
      expect(patched.body).toMatchObject({
        url: other.url,
        eventTypes: ['port_call.status_changed', 'invoice.issued'],
        status: 'DISABLED',
        disabledReason: expect.stringMatching(/Paused/),
      });
      const resumed = await rest(server.url, `/v1/webhook-subscriptions/${id}`, {
        method: 'PATCH',
        key,
        body: { active: true },
      });
      expect(resumed.body).toMatchObject({ status: 'ACTIVE', disabledReason: null });

      const before = await storedEndpointRows(server);
      for (const [body, message] of [
        [{}, /patch: name at least one of/],
        [{ url: 'ftp://x/y' }, /url: must use http or https/],
        [{ eventTypes: ['tier_change'] }, /eventTypes: unknown event type tier_change/],
        [{ event_types: ['invoice.issued'] }, /Field "event_types" is not defined/],
        [{ active: 'yes' }, /Boolean/],
      ] as const) {
        const bad = await rest(server.url, `/v1/webhook-subscriptions/${id}`, { method: 'PATCH', key, body });
        expect(bad.status, JSON.stringify(body)).toBe(400);
        expect(bad.body.error.message).toMatch(message);
      }
      expect(await storedEndpointRows(server)).toBe(before);

      // The liquidity door does not see port-ops subscriptions, and the other way round.
      const crossed = await rest(server.url, `/v1/webhooks/${id}`, { key: server.key('PROFESSIONAL') });
      expect(crossed.status).toBe(404);
    } finally {
      await other.close();
    }
  });

  it('delivers each subscribed event once with a valid signature and the documented payload', async () => {
    const { secret, endpoint } = await register();
    const events = await commitEvents(server, [
      tierChange('alpha'),
      scoreChange('beta', 4),
      { type: 'aum_change', payload: { slug: 'gamma' } },
    ]);
    const got = await receiver.waitFor((r) => r.length >= 2);
    await new Promise((r) => setTimeout(r, 300));
    expect(got).toHaveLength(2);
    for (const request of got) {
      expect(request.headers['content-type']).toBe('application/json');
      expect(
        verifySignature(secret, request.body, String(request.headers['tidegate-signature']), new Date()),
      ).toBe(true);
      expect(
        verifySignature(
          'whsec_wrong',
          request.body,
          String(request.headers['tidegate-signature']),
          new Date(),
        ),
      ).toBe(false);
      expect(request.headers['tidegate-event-id']).toBe(request.json.id);
    }
    const byType = Object.fromEntries(got.map((r) => [r.json.type, r.json]));
    expect(byType.tier_change).toEqual({
      id: events[0]!.id,
      type: 'tier_change',
      created_at: events[0]!.occurredAt.toISOString(),
      data: events[0]!.payload,
    });
    expect(byType.score_change?.id).toBe(events[1]!.id);

    const log = await until(
      () => rest(server.url, `/v1/webhooks/${endpoint.id}/deliveries`, { key: server.key('PROFESSIONAL') }),
      (res) => res.body.every((d: { status: string }) => d.status === 'DELIVERED'),
      'both deliveries recorded',
    );
    expect(log.status).toBe(200);
    expect(
      log.body.map((d: { status: string; attempts: number; last_status_code: number }) => [
        d.status,
        d.attempts,
        d.last_status_code,
      ]),
    ).toEqual([
      ['DELIVERED', 1, 200],
      ['DELIVERED', 1, 200],
    ]);
  });

  it('keeps signing for endpoints stored before secrets were sealed, and re-seals them', async () => {
    const professional = server.demo.accounts.find((a) => a.plan === 'PROFESSIONAL')!;
    const legacy = 'whsec_storedbeforesealingexisted0123456789abcdefghij';
    const em = server.database.db.em();
    const id = '11111111-1111-4111-8111-111111111111';
    await em.insert(WebhookEndpoint, {
      id,
      accountId: professional.accountId,
      domain: WebhookDomain.LIQUIDITY,
      url: receiver.url,
      eventTypes: ['tier_change'],
      secret: legacy,
      secretPrefix: legacy.slice(0, 12),
      status: WebhookEndpointStatus.ACTIVE,
      consecutiveFailures: 0,
      createdAt: new Date(Date.now() - 1000),
    });
    await commitEvents(server, [tierChange('legacy-1')]);
    const [first] = await receiver.waitFor((r) => r.length >= 1);
    expect(
      verifySignature(legacy, first!.body, String(first!.headers['tidegate-signature']), new Date()),
    ).toBe(true);

    // What the events module runs at start.
    expect(await resealLegacySecrets(server.database.db, server.app.services.secrets)).toBe(1);
    expect(await resealLegacySecrets(server.database.db, server.app.services.secrets)).toBe(0);
    expect(await storedEndpointRows(server)).not.toContain(legacy);

    await commitEvents(server, [tierChange('legacy-2')]);
    const all = await receiver.waitFor((r) => r.length >= 2);
    expect(
      verifySignature(legacy, all[1]!.body, String(all[1]!.headers['tidegate-signature']), new Date()),
    ).toBe(true);
  });

  it('sends nothing for a change that rolled back, and stops liquidity events when the account drops below Professional', async () => {
    await register('/v1/webhooks', ['tier_change']);
    await expect(
      server.database.db.em().transactional(async (tx) => {
        stageEvents(tx, server.app.services, [tierChange('rolled-back')]);
        throw new Error('the change failed');
      }),
    ).rejects.toThrow('the change failed');
    const professional = server.demo.accounts.find((a) => a.plan === 'PROFESSIONAL')!;
    await changePlan(server.database.db.em(), professional.accountId, Plan.ANALYST);
    try {
      const [dropped] = await commitEvents(server, [tierChange('after-downgrade')]);
      // The plan that counts is the one when the event is dispatched: wait for that first.
      await until(
        () => server.database.db.em().findOne(EventRecord, { id: dropped!.id }),
        (row) => Boolean(row?.dispatchedAt),
        'dispatch',
      );
      await changePlan(server.database.db.em(), professional.accountId, Plan.PROFESSIONAL);
      const [kept] = await commitEvents(server, [tierChange('after-upgrade')]);
      await receiver.waitFor((r) => r.length >= 1);
      await new Promise((r) => setTimeout(r, 300));
      expect(receiver.received.map((r) => r.json.id)).toEqual([kept!.id]);
    } finally {
      await changePlan(server.database.db.em(), professional.accountId, Plan.PROFESSIONAL);
    }
  });

  it('delivers port-ops events only to endpoints of the account that owns them', async () => {
    const own = server.demo.accounts.find((a) => a.plan === 'ANALYST')!;
    const other = server.demo.accounts.find((a) => a.plan === 'PROFESSIONAL')!;
    await register('/v1/webhook-subscriptions', ['port_call.status_changed'], own.apiKey);
    const [mine] = await commitEvents(server, [
      {
        type: 'port_call.status_changed',
        accountId: own.accountId,
        payload: { portCallId: 'pc-1', from: 'SCHEDULED', to: 'ARRIVED' },
      },
      {
        type: 'port_call.status_changed',
        accountId: other.accountId,
        payload: { portCallId: 'pc-2', from: 'SCHEDULED', to: 'ARRIVED' },
      },
    ]);
    await receiver.waitFor((r) => r.length >= 1);
    await new Promise((r) => setTimeout(r, 300));
    expect(receiver.received.map((r) => r.json.id)).toEqual([mine!.id]);
  });

  it('backs off on 500s, disables the endpoint with a reason, and keeps every attempt in the log across a redelivery', async () => {
    const { endpoint } = await register('/v1/webhooks', ['tier_change']);
    receiver.respond = (_request, res) => {
      res.writeHead(500, { 'content-type': 'text/plain' }).end('receiver is down for maintenance');
      return 'hang';
    };
    const [event] = await commitEvents(server, [tierChange('delta')]);
    await receiver.waitFor((r) => r.length >= 3, 20_000);
    const [a, b, c] = receiver.received.map((r) => r.at) as [number, number, number];
    // base 1 s, ×3 per retry, ±20 % jitter: the second wait is clearly longer than the first.
    expect(b - a).toBeGreaterThanOrEqual(700);
    expect(c - b).toBeGreaterThan(b - a);
    expect(new Set(receiver.received.map((r) => r.json.id))).toEqual(new Set([event!.id]));

    const listed = await until(
      async () => (await rest(server.url, '/v1/webhooks', { key: server.key('PROFESSIONAL') })).body[0],
      (e: { status: string; disabled_reason: string }) => e.status === 'DISABLED',
      'the endpoint to be disabled',
    );
    expect(listed.disabled_reason).toMatch(/after 3 failed attempts.*HTTP 500/);
    const log = await rest(server.url, `/v1/webhooks/${endpoint.id}/deliveries?status=FAILED`, {
      key: server.key('PROFESSIONAL'),
    });
    const delivery = log.body[0];
    expect(delivery).toMatchObject({
      status: 'FAILED',
      attempts: 3,
      last_status_code: 500,
      last_error: 'HTTP 500',
      event_id: event!.id,
    });

    const deliveryPath = `/v1/webhooks/${endpoint.id}/deliveries/${delivery.id}`;
    const refused = await rest(server.url, `${deliveryPath}/redeliver`, {
      method: 'POST',
      key: server.key('PROFESSIONAL'),
    });
    expect(refused.status).toBe(409);
    expect(refused.body.error.message).toMatch(/disabled.*enable it first/);

    receiver.respond = () => 204;
    const enabled = await rest(server.url, `/v1/webhooks/${endpoint.id}/enable`, {
      method: 'POST',
      key: server.key('PROFESSIONAL'),
    });
    expect(enabled.body).toMatchObject({ status: 'ACTIVE', disabled_reason: null, consecutive_failures: 0 });
    const again = await rest(server.url, `${deliveryPath}/redeliver`, {
      method: 'POST',
      key: server.key('PROFESSIONAL'),
    });
    expect(again.status).toBe(202);
    expect(again.body).toMatchObject({ status: 'PENDING', attempts: 3 });
    await receiver.waitFor((r) => r.length >= 4);
    expect(receiver.received[3]!.json.id).toBe(event!.id);

    const detail = await until(
      () => rest(server.url, deliveryPath, { key: server.key('PROFESSIONAL') }),
      (res) => res.body?.status === 'DELIVERED',
      'the redelivery to be recorded',
    );
    expect(detail.body).toMatchObject({ status: 'DELIVERED', attempts: 4, last_status_code: 204 });
    expect(
      detail.body.attempt_log.map((a: { attempt: number; status_code: number; error: string | null }) => [
        a.attempt,
        a.status_code,
        a.error,
      ]),
    ).toEqual([
      [1, 500, 'HTTP 500'],
      [2, 500, 'HTTP 500'],
      [3, 500, 'HTTP 500'],
      [4, 204, null],
    ]);
    expect(detail.body.attempt_log[0]).toMatchObject({
      response_snippet: 'receiver is down for maintenance',
      duration_ms: expect.any(Number),
      attempted_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
    });

    // Another endpoint's path does not reach this delivery.
    const { endpoint: second } = await register('/v1/webhooks', ['score_change']);
    const crossed = await rest(server.url, `/v1/webhooks/${second.id}/deliveries/${delivery.id}`, {
      key: server.key('PROFESSIONAL'),
    });
    expect(crossed.status).toBe(404);
  });

  it('works the same over GraphQL: the secret only in the registration result, attempt log per delivery', async () => {
    const created = await gql(
      server.url,
      'mutation($input: WebhookEndpointInput!) { createWebhookSubscription(input: $input) { secret endpoint { id domain eventTypes status } } }',
      {
        key: server.key('ANALYST'),
        variables: { input: { url: receiver.url, eventTypes: ['invoice.issued', 'document.uploaded'] } },
      },
    );
    expect(created.body.errors).toBeUndefined();
    const registration = created.body.data!.createWebhookSubscription as {
      secret: string;
      endpoint: { id: string };
    };
    expect(registration).toMatchObject({
      endpoint: { domain: 'PORT_OPS', eventTypes: ['invoice.issued', 'document.uploaded'], status: 'ACTIVE' },
    });
    const listed = await gql(
      server.url,
      '{ webhookSubscriptions(first: 5) { totalCount nodes { id secretPrefix } } }',
      { key: server.key('ANALYST') },
    );
    expect(listed.body.data).toEqual({
      webhookSubscriptions: {
        totalCount: 1,
        nodes: [{ id: registration.endpoint.id, secretPrefix: registration.secret.slice(0, 12) }],
      },
    });
    const noLiquidity = await gql(server.url, '{ webhooks { totalCount } }', { key: server.key('ANALYST') });
    expect(noLiquidity.body.errors?.[0]?.extensions?.code).toBe('PLAN_REQUIRED');

    const analyst = server.demo.accounts.find((a) => a.plan === 'ANALYST')!;
    await commitEvents(server, [
      { type: 'invoice.issued', accountId: analyst.accountId, payload: { invoiceId: 'i-1' } },
    ]);
    await receiver.waitFor((r) => r.length >= 1);
    const deliveries = await until(
      () =>
        gql(
          server.url,
          'query($id: ID!) { webhookSubscriptionDeliveries(endpointId: $id) { nodes { id status attempts attemptLog { attempt statusCode } } } }',
          { key: server.key('ANALYST'), variables: { id: registration.endpoint.id } },
        ),
      (res) =>
        (res.body.data?.webhookSubscriptionDeliveries as { nodes: Array<{ status: string }> } | undefined)
          ?.nodes[0]?.status === 'DELIVERED',
      'the delivery',
    );
    expect(deliveries.body.data!.webhookSubscriptionDeliveries).toMatchObject({
      nodes: [{ status: 'DELIVERED', attempts: 1, attemptLog: [{ attempt: 1, statusCode: 200 }] }],
    });
  });

  it('rejects a bad status filter or page size on the delivery log with 400', async () => {
    const { endpoint } = await register();
    const badStatus = await rest(server.url, `/v1/webhooks/${endpoint.id}/deliveries?status=BOGUS`, {
      key: server.key('PROFESSIONAL'),
    });
    expect(badStatus.status).toBe(400);
    const badLimit = await rest(server.url, `/v1/webhooks/${endpoint.id}/deliveries?limit=500`, {
      key: server.key('PROFESSIONAL'),
    });
    expect(badLimit.status).toBe(400);
    expect(badLimit.body.error.message).toMatch(/limit: must be between 1 and 100/);
  });

  it('answers 404 for unknown or foreign endpoints and deliveries', async () => {
    const { endpoint } = await register();
    for (const [method, path] of [
      ['GET', `/v1/webhooks/${endpoint.id}`],
      ['GET', `/v1/webhooks/${endpoint.id}/deliveries`],
      ['POST', `/v1/webhooks/${endpoint.id}/enable`],
      ['POST', `/v1/webhooks/${endpoint.id}/rotate-secret`],
      ['DELETE', `/v1/webhooks/${endpoint.id}`],
      ['POST', `/v1/webhooks/${endpoint.id}/deliveries/00000000-0000-4000-8000-000000000000/redeliver`],
      ['GET', '/v1/webhooks/nope/deliveries'],
    ] as const) {
      const res = await rest(server.url, path, { method, key: server.key('INSTITUTIONAL') });
      expect(res.status, path).toBe(404);
    }
    expect(await count(server, WebhookEndpoint)).toBe(1);
    const deleted = await rest(server.url, `/v1/webhooks/${endpoint.id}`, {
      method: 'DELETE',
      key: server.key('PROFESSIONAL'),
    });
    expect(deleted.status).toBe(204);
    expect(await count(server, WebhookEndpoint)).toBe(0);
  });
});

describeEachDialect('webhooks with slow receivers', (dialect) => {
  let server: TestServer;
  let healthy: Receiver;
  let slow: Receiver;
  beforeAll(async () => {
    // A long timeout: the hanging receiver's attempts stay open for the whole test.
    server = await startTestServer({ dialect, env: { WEBHOOK_TIMEOUT: '60s' } });
    healthy = await startReceiver();
    slow = await startReceiver();
  });
  afterAll(async () => {
    await server?.close();
    await healthy?.close();
    await slow?.close();
  });

  async function registerFor(url: string, key = server.key('PROFESSIONAL')): Promise<string> {
    const res = await rest(server.url, '/v1/webhooks', {
      method: 'POST',
      key,
      body: { url, event_types: ['tier_change'] },
    });
    expect(res.status, res.text).toBe(201);
    return res.body.endpoint.id as string;
  }

  it('holds at most a few attempt slots for a hanging receiver with a backlog, so a healthy one still gets everything', async () => {
    slow.respond = () => 'hang';
    await registerFor(slow.url, server.key('INSTITUTIONAL'));
    await registerFor(healthy.url);
    // More due deliveries to the hanging receiver than the process has attempt slots (32).
    const events = await commitEvents(
      server,
      Array.from({ length: 40 }, (_, i) => tierChange(`p${i}`)),
    );
    await healthy.waitFor((r) => r.length >= events.length);
    expect(new Set(healthy.received.map((r) => r.json.id)).size).toBe(events.length);
    // Every request the hanging receiver got is still open (60 s timeout), and there are only a few.
    expect(slow.received.length).toBeLessThanOrEqual(MAX_IN_FLIGHT_PER_ENDPOINT);
    const inFlight = await server.database.db.em().count(WebhookDelivery, {
      endpoint: { url: slow.url },
      leaseToken: { $ne: null },
    });
    expect(inFlight).toBe(MAX_IN_FLIGHT_PER_ENDPOINT);

    // A delivery whose attempt is in flight cannot be redelivered: that attempt's result would win.
    const leased = await server.database.db
      .em()
      .findOneOrFail(WebhookDelivery, { endpoint: { url: slow.url }, leaseToken: { $ne: null } });
    const refused = await rest(
      server.url,
      `/v1/webhooks/${leased.endpoint.id}/deliveries/${leased.id}/redeliver`,
      { method: 'POST', key: server.key('INSTITUTIONAL') },
    );
    expect(refused.status).toBe(409);
    expect(refused.body.error.message).toMatch(/is in flight/);
    const after = await server.database.db.em().findOneOrFail(WebhookDelivery, { id: leased.id });
    expect(after).toMatchObject({
      leaseToken: leased.leaseToken,
      attemptsAtRedelivery: 0,
      nextAttemptAt: leased.nextAttemptAt,
    });
  });

  it('records the status as soon as it comes, keeps 1 KiB of the body, and hangs up on the rest', async () => {
    await server.database.db.em().nativeDelete(WebhookEndpoint, {});
    const streaming = await startReceiver();
    let receiverSawHangUp: () => void;
    const hungUp = new Promise<void>((r) => (receiverSawHangUp = r));
    streaming.respond = (_request, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.write('x'.repeat(4096)); // and never end: a receiver streaming an endless body
      res.on('close', () => receiverSawHangUp());
      return 'hang';
    };
    try {
      const id = await registerFor(streaming.url);
      await commitEvents(server, [tierChange('stream')]);
      await hungUp;
      const delivery = await until(
        () => server.database.db.em().findOne(WebhookDelivery, { endpoint: id }),
        (d) => d?.status === WebhookDeliveryStatus.DELIVERED,
        'the delivery to be recorded',
      );
      const [attempt] = await server.database.db
        .em()
        .find(WebhookDeliveryAttempt, { delivery: delivery!.id });
      expect(attempt).toMatchObject({ attempt: 1, statusCode: 200, error: null });
      expect(attempt!.responseSnippet).toBe('x'.repeat(1024));
    } finally {
      await streaming.close();
    }
  });
});

describe('webhook secret rotation', () => {
  let server: TestServer;
  let receiver: Receiver;
  const clock = new ManualClock('2026-03-01T00:00:00.000Z');
  beforeAll(async () => {
    server = await startTestServer({ clock, env: { WEBHOOK_SECRET_OVERLAP: '24h' } });
    receiver = await startReceiver();
  });
  afterAll(async () => {
    await server?.close();
    await receiver?.close();
  });

  it('issues a new secret once, signs with both during the overlap window, then with the new one only', async () => {
    const key = server.key('PROFESSIONAL');
    const created = await rest(server.url, '/v1/webhooks', {
      method: 'POST',
      key,
      body: { url: receiver.url, event_types: ['tier_change'] },
    });
    const oldSecret = created.body.secret as string;
    const id = created.body.endpoint.id as string;

    const rotated = await rest(server.url, `/v1/webhooks/${id}/rotate-secret`, { method: 'POST', key });
    expect(rotated.status, rotated.text).toBe(200);
    const newSecret = rotated.body.secret as string;
    expect(newSecret).toMatch(/^whsec_/);
    expect(newSecret).not.toBe(oldSecret);
    expect(rotated.body.endpoint).toMatchObject({
      secret_prefix: newSecret.slice(0, 12),
      previous_secret_expires_at: new Date(clock.now().getTime() + 24 * HOUR).toISOString(),
    });
    const rows = await storedEndpointRows(server);
    for (const secret of [oldSecret, newSecret]) expect(rows).not.toContain(secret.slice('whsec_'.length));
    expect((await rest(server.url, `/v1/webhooks/${id}`, { key })).text).not.toContain(newSecret);

    clock.advance(23 * HOUR);
    await commitEvents(server, [tierChange('during-overlap')]);
    const [during] = await receiver.waitFor((r) => r.length >= 1);
    const header = String(during!.headers['tidegate-signature']);
    expect(header).toMatch(/^t=\d+,v1=[0-9a-f]{64},v1=[0-9a-f]{64}$/);
    expect(verifySignature(newSecret, during!.body, header, clock.now())).toBe(true);
    expect(verifySignature(oldSecret, during!.body, header, clock.now())).toBe(true);

    clock.advance(2 * HOUR);
    await commitEvents(server, [tierChange('after-overlap')]);
    const all = await receiver.waitFor((r) => r.length >= 2);
    const after = String(all[1]!.headers['tidegate-signature']);
    expect(after).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);
    expect(verifySignature(newSecret, all[1]!.body, after, clock.now())).toBe(true);
    expect(verifySignature(oldSecret, all[1]!.body, after, clock.now())).toBe(false);
  });

  it('rotates over GraphQL too, for port-ops subscriptions, and answers 404 for another account', async () => {
    const created = await gql(
      server.url,
      'mutation($input: WebhookEndpointInput!) { createWebhookSubscription(input: $input) { endpoint { id } } }',
      {
        key: server.key('ANALYST'),
        variables: { input: { url: receiver.url, eventTypes: ['port_call.created'] } },
      },
    );
    const id = (created.body.data!.createWebhookSubscription as { endpoint: { id: string } }).endpoint.id;
    const foreign = await gql(
      server.url,
      'mutation($id: ID!) { rotateWebhookSubscriptionSecret(id: $id) { secret } }',
      {
        key: server.key('INSTITUTIONAL'),
        variables: { id },
      },
    );
    expect(foreign.body.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
    const rotated = await gql(
      server.url,
      'mutation($id: ID!) { rotateWebhookSubscriptionSecret(id: $id) { secret endpoint { secretPrefix previousSecretExpiresAt } } }',
      { key: server.key('ANALYST'), variables: { id } },
    );
    const result = rotated.body.data!.rotateWebhookSubscriptionSecret as {
      secret: string;
      endpoint: { secretPrefix: string; previousSecretExpiresAt: string };
    };
    expect(result.endpoint.secretPrefix).toBe(result.secret.slice(0, 12));
    expect(result.endpoint.previousSecretExpiresAt).toBe(
      new Date(clock.now().getTime() + 24 * HOUR).toISOString(),
    );
  });
});

describeEachDialect('the webhook worker between polls', (dialect) => {
  /** The look for due deliveries that starts a claim (`deliverDue`), as the ORM logs it. */
  const DUE_SEARCH = /select 1 from ["`]webhook_deliveries["`]/;
  /** The look for undispatched events that starts a dispatch (`dispatchEvents`). */
  const DISPATCH_SEARCH = /select 1 from ["`]events["`] .* is null limit/;
  let server: TestServer;
  let receiver: Receiver;
  const statements: string[] = [];
  beforeAll(async () => {
    // No poll during the test: every turn of the worker is a wake-up the test causes.
    server = await startTestServer({
      dialect,
      env: { WEBHOOK_POLL: '1h' },
      onQuery: (message) => statements.push(message),
    });
    receiver = await startReceiver();
  });
  afterAll(async () => {
    await server?.close();
    await receiver?.close();
  });

  const dueSearches = () => statements.filter((s) => DUE_SEARCH.test(s)).length;
  const dispatchSearches = () => statements.filter((s) => DISPATCH_SEARCH.test(s)).length;
  const undispatched = async (events: Array<{ id: string }>) =>
    (
      await server.database.db
        .em()
        .find(
          EventRecord,
          { id: { $in: events.map((e) => e.id) }, dispatchedAt: null },
          { orderBy: { id: 'asc' } },
        )
    ).map((e) => e.id);
  const dispatched = (id: string) =>
    until(
      () => server.database.db.em().findOne(EventRecord, { id }),
      (event) => event?.dispatchedAt != null,
      `event ${id} to be dispatched`,
    );

  it('leaves events no endpoint takes to the poll, and dispatches at once the ones an endpoint registered or widened here takes', async () => {
    // The start-up turn looks for due deliveries once (a process may start with some waiting).
    await until(
      async () => dueSearches(),
      (n) => n >= 1,
      'the start-up search for due deliveries',
    );
    const before = dueSearches();
    // The first event is dispatched at once: no dispatch has read the endpoints yet.
    const [first] = await commitEvents(server, [tierChange('quiet-1')]);
    await dispatched(first!.id);
    const dispatches = dispatchSearches();
    // Now the worker knows no endpoint takes tier changes: these wait for the poll (an hour away).
    const quiet = await commitEvents(server, [tierChange('quiet-2'), tierChange('quiet-3')]);
    await new Promise((r) => setTimeout(r, 300));
    expect(await undispatched(quiet)).toEqual(quiet.map((e) => e.id).sort());
    expect(dispatchSearches()).toBe(dispatches);
    // No delivery was created: no search for due deliveries either.
    expect(dueSearches()).toBe(before);

    // An endpoint registered in this process: the next event it takes is dispatched on its publish.
    const res = await rest(server.url, '/v1/webhooks', {
      method: 'POST',
      key: server.key('PROFESSIONAL'),
      body: { url: receiver.url, event_types: ['tier_change'] },
    });
    expect(res.status, res.text).toBe(201);
    const [event] = await commitEvents(server, [tierChange('heard')]);
    const [request] = await receiver.waitFor((r) => r.length >= 1);
    expect(request!.json.id).toBe(event!.id);
    expect(dueSearches()).toBeGreaterThan(before);
    // The waiting ones went with it, to nobody: they occurred before the endpoint existed.
    expect(await undispatched(quiet)).toEqual([]);

    // Widened to score changes: the next one is dispatched on its publish too (nobody took them before).
    const endpoint = (res.body as { endpoint: { id: string } }).endpoint;
    const widened = await rest(server.url, `/v1/webhooks/${endpoint.id}`, {
      method: 'PATCH',
      key: server.key('PROFESSIONAL'),
      body: { event_types: ['tier_change', 'score_change'] },
    });
    expect(widened.status, widened.text).toBe(200);
    const [score] = await commitEvents(server, [scoreChange('heard', 4)]);
    await receiver.waitFor((r) => r.length >= 2);
    await new Promise((r) => setTimeout(r, 200));
    expect(receiver.received.map((r) => r.json.id)).toEqual([event!.id, score!.id]);
  });
});

describeEachDialect('the webhook worker, events no endpoint takes', (dialect) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ dialect, env: { WEBHOOK_POLL: '1s' } });
  });
  afterAll(async () => {
    await server?.close();
  });

  it('dispatches them at the next poll', async () => {
    const dispatched = (id: string) =>
      until(
        () => server.database.db.em().findOne(EventRecord, { id }),
        (event) => event?.dispatchedAt != null,
        `event ${id} to be dispatched`,
      );
    // Dispatched at once: no dispatch has read the endpoints yet. After it, the worker knows none
    // takes tier or score changes, so the next ones wait for the poll, and it dispatches them.
    const [first] = await commitEvents(server, [tierChange('poll-1')]);
    await dispatched(first!.id);
    const [tier] = await commitEvents(server, [tierChange('poll-2')]);
    const [score] = await commitEvents(server, [scoreChange('poll-3', 4)]);
    await dispatched(tier!.id);
    await dispatched(score!.id);
  });
});

describe('webhook deliverer and DNS', () => {
  let server: TestServer;
  let receiver: Receiver;
  beforeAll(async () => {
    // This server's own worker is off: the test runs one with a resolver that plays DNS.
    server = await startTestServer({
      env: { WEBHOOK_WORKER: 'false', WEBHOOK_TIMEOUT: '1s', WEBHOOK_POLL: '1s' },
    });
    receiver = await startReceiver();
  });
  afterAll(async () => {
    await server?.close();
    await receiver?.close();
  });

  async function endpointAt(url: string): Promise<string> {
    const professional = server.demo.accounts.find((a) => a.plan === 'PROFESSIONAL')!;
    const em = server.database.db.em();
    const endpoint = em.create(WebhookEndpoint, {
      accountId: professional.accountId,
      domain: WebhookDomain.LIQUIDITY,
      url,
      eventTypes: ['tier_change'],
      secret: server.app.services.secrets.seal('whsec_dns'),
      secretPrefix: 'whsec_dns',
      status: WebhookEndpointStatus.ACTIVE,
      consecutiveFailures: 0,
      createdAt: new Date(Date.now() - 1000),
    });
    await em.persistAndFlush(endpoint);
    return endpoint.id;
  }

  it('tries the next checked address when the first cannot be connected to', async () => {
    const port = new URL(receiver.url).port;
    const id = await endpointAt(`http://hooks.test:${port}/hooks`);
    const outbox = new WebhookOutbox({
      ...server.app.services,
      // Nothing listens on 127.0.0.2 (the receiver is bound to 127.0.0.1): connection refused.
      resolve: async () => [
        { address: '127.0.0.2', family: 4 },
        { address: '127.0.0.1', family: 4 },
      ],
    });
    outbox.start();
    try {
      await commitEvents(server, [tierChange('fallback')]);
      const [request] = await receiver.waitFor((r) => r.length >= 1);
      expect(request!.json.data.slug).toBe('fallback');
      const delivery = await until(
        () => server.database.db.em().findOne(WebhookDelivery, { endpoint: id }),
        (d) => d?.status === WebhookDeliveryStatus.DELIVERED,
        'the delivery to be recorded',
      );
      expect(delivery).toMatchObject({ attempts: 1, lastStatusCode: 200 });
    } finally {
      await outbox.stop();
      await server.database.db.em().nativeDelete(WebhookEndpoint, {});
    }
  });

  it('bounds the DNS lookup by the attempt timeout, so the attempt ends inside its lease', async () => {
    const id = await endpointAt('http://slow-dns.test/hooks');
    let lookups = 0;
    const outbox = new WebhookOutbox({
      ...server.app.services,
      resolve: () => {
        lookups++;
        return new Promise(() => {}); // a resolver that never answers
      },
    });
    outbox.start();
    try {
      await commitEvents(server, [tierChange('slow-dns')]);
      const delivery = await until(
        () => server.database.db.em().findOne(WebhookDelivery, { endpoint: id }),
        (d) => (d?.attempts ?? 0) >= 1,
        'the attempt to be recorded',
      );
      expect(delivery).toMatchObject({
        status: WebhookDeliveryStatus.PENDING,
        lastStatusCode: null,
        lastError: 'no answer within 1000 ms',
        leaseToken: null,
      });
      const [attempt] = await server.database.db
        .em()
        .find(WebhookDeliveryAttempt, { delivery: delivery!.id });
      // The lease is the timeout plus 5 s: the attempt, lookup included, ended well inside it.
      expect(attempt!.durationMs).toBeLessThan(1000 + 5000);
      expect(lookups).toBe(1);
    } finally {
      await outbox.stop();
    }
  });
});

describe('webhook SSRF guard (WEBHOOK_ALLOW_PRIVATE=false)', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ env: { WEBHOOK_ALLOW_PRIVATE: 'false' } });
  });
  afterAll(() => server?.close());

  it('refuses loopback, private, link-local, reserved and metadata addresses in every spelling, and writes nothing', async () => {
    for (const url of [
      'http://127.0.0.1:9/x',
      'http://localhost/x',
      'http://10.1.2.3/x',
      'http://192.168.0.10/x',
      'http://172.20.0.1/x',
      'http://169.254.169.254/latest/meta-data',
      'http://[::ffff:169.254.169.254]/latest/meta-data',
      'http://[64:ff9b::a9fe:a9fe]/latest/meta-data',
      'http://[::1]/x',
      'http://[::ffff:127.0.0.1]/x',
      'http://[::127.0.0.1]/x',
      'http://[2002:7f00:1::1]/x',
      'http://[64:ff9b::7f00:1]/x',
      'http://[fec0::1]/x',
      'http://[fe80::1]/x',
      'http://0.0.0.0/x',
      'http://198.51.100.7/x',
    ]) {
      const res = await rest(server.url, '/v1/webhooks', {
        method: 'POST',
        key: server.key('PROFESSIONAL'),
        body: { url, event_types: ['tier_change'] },
      });
      expect(res.status, url).toBe(400);
      expect(res.body.error.message, url).toMatch(
        url.includes('localhost')
          ? /^url: host 'localhost' resolves to an address webhooks may not reach$/
          : /^url: \S+ is a (private, loopback, link-local or reserved|cloud metadata) address$/,
      );
    }
    expect(await count(server, WebhookEndpoint)).toBe(0);
  });
});
