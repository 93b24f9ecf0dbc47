import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { EventRecord, WebhookDelivery, WebhookEndpoint } from '../../src/events/entities.js';
import { verifySignature } from '../../src/events/signature.js';
import { stageEvents } from '../../src/events/stage.js';
import { changePlan } from '../../src/accounts/service.js';
import { Plan } from '../../src/kernel/plans.js';
import { describeEachDialect } from '../helpers/env.js';
import { createKey, gql, rest, startTestServer, type TestServer } from '../helpers/server.js';
import { commitEvents, scoreChange, startReceiver, tierChange, type Receiver } from './helpers.js';

async function count(
  server: TestServer,
  entity: typeof WebhookEndpoint | typeof WebhookDelivery,
): Promise<number> {
  return server.database.db.em().count(entity, {});
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
    const res = await rest(server.url, path, {
      method: 'POST',
      key,
      body: { url: receiver.url, event_types: eventTypes, description: 'test' },
    });
    expect(res.status, res.text).toBe(201);
    return res.body as { secret: string; endpoint: { id: string; status: string } };
  }

  it('registers a liquidity endpoint, shows the secret once, and lists it without the secret', async () => {
    const created = await register();
    expect(created.secret).toMatch(/^whsec_/);
    expect(created.endpoint).toMatchObject({
      url: receiver.url,
      event_types: ['score_change', 'tier_change'],
      status: 'ACTIVE',
      secret_prefix: created.secret.slice(0, 12),
    });
    const list = await rest(server.url, '/v1/webhooks?limit=10', { key: server.key('PROFESSIONAL') });
    expect(list.status).toBe(200);
    expect(list.body.total).toBe(1);
    expect(list.body.data[0].id).toBe(created.endpoint.id);
    expect(list.text).not.toContain(created.secret);
  });

  it('refuses liquidity webhooks below Professional with 402 PLAN_REQUIRED and writes nothing', async () => {
    const res = await rest(server.url, '/v1/webhooks', {
      method: 'POST',
      key: server.key('ANALYST'),
      body: { url: receiver.url, event_types: ['tier_change'] },
    });
    expect(res.status).toBe(402);
    expect(res.body.error.code).toBe('PLAN_REQUIRED');
    expect(await count(server, WebhookEndpoint)).toBe(0);
  });

  it('requires webhooks:manage for port-ops subscriptions (403) and writes nothing', async () => {
    const { secret } = await createKey(server, { plan: 'ANALYST', scopes: 'read:port_calls' });
    const res = await rest(server.url, '/v1/webhook-subscriptions', {
      method: 'POST',
      key: secret,
      body: { url: receiver.url, event_types: ['port_call.created'] },
    });
    expect(res.status).toBe(403);
    expect(res.body.error.message).toMatch(/webhooks:manage/);
    expect(await count(server, WebhookEndpoint)).toBe(0);
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
        { url: receiver.url, event_types: ['tier_change'] },
        /eventTypes: unknown event type tier_change/,
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

    const log = await rest(server.url, `/v1/webhooks/${endpoint.id}/deliveries`, {
      key: server.key('PROFESSIONAL'),
    });
    expect(log.status).toBe(200);
    expect(log.body.total).toBe(2);
    expect(
      log.body.data.map((d: { status: string; attempts: number; last_status_code: number }) => [
        d.status,
        d.attempts,
        d.last_status_code,
      ]),
    ).toEqual([
      ['DELIVERED', 1, 200],
      ['DELIVERED', 1, 200],
    ]);
  });

  it('keeps delivering to other endpoints while one receiver hangs', async () => {
    const slow = await startReceiver();
    try {
      slow.respond = () => 'hang';
      const registered = await rest(server.url, '/v1/webhooks', {
        method: 'POST',
        key: server.key('INSTITUTIONAL'),
        body: { url: slow.url, event_types: ['tier_change'] },
      });
      expect(registered.status).toBe(201);
      await register('/v1/webhooks', ['tier_change']);
      await commitEvents(server, [tierChange('one')]);
      await slow.waitFor((r) => r.length >= 1);
      await commitEvents(server, [tierChange('two')]);
      // The slow request is still open (timeout 2 s) while both events reach the healthy receiver.
      await receiver.waitFor((r) => r.length >= 2, 1_500);
      expect(receiver.received.map((r) => r.json.data.slug).sort()).toEqual(['one', 'two']);
    } finally {
      await slow.close();
    }
  });

  it('sends nothing for a change that rolled back, and stops liquidity events when the account drops below Professional', async () => {
    await register('/v1/webhooks', ['tier_change']);
    await expect(
      server.database.db.em().transactional(async (tx) => {
        stageEvents(tx, server.app.services.clock, [tierChange('rolled-back')]);
        throw new Error('the change failed');
      }),
    ).rejects.toThrow('the change failed');
    const professional = server.demo.accounts.find((a) => a.plan === 'PROFESSIONAL')!;
    await changePlan(server.database.db.em(), professional.accountId, Plan.ANALYST);
    try {
      const [dropped] = await commitEvents(server, [tierChange('after-downgrade')]);
      // The plan that counts is the one when the event is dispatched: wait for that first.
      for (let i = 0; i < 100; i++) {
        const row = await server.database.db.em().findOne(EventRecord, { id: dropped!.id });
        if (row?.dispatchedAt) break;
        await new Promise((r) => setTimeout(r, 50));
      }
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

  it('backs off on 500s, gives up after the attempt budget, disables the endpoint with a reason, and redelivers on request', async () => {
    const { endpoint } = await register('/v1/webhooks', ['tier_change']);
    receiver.respond = () => 500;
    const [event] = await commitEvents(server, [tierChange('delta')]);
    await receiver.waitFor((r) => r.length >= 3, 20_000);
    const [a, b, c] = receiver.received.map((r) => r.at) as [number, number, number];
    // base 1 s, ×3 per retry, ±20 % jitter: the second wait is clearly longer than the first.
    expect(b - a).toBeGreaterThanOrEqual(700);
    expect(c - b).toBeGreaterThan(b - a);
    expect(new Set(receiver.received.map((r) => r.json.id))).toEqual(new Set([event!.id]));

    let listed: { status: string; disabled_reason: string } | undefined;
    for (let i = 0; i < 100 && listed?.status !== 'DISABLED'; i++) {
      await new Promise((r) => setTimeout(r, 50));
      listed = (await rest(server.url, '/v1/webhooks', { key: server.key('PROFESSIONAL') })).body.data[0];
    }
    expect(listed?.status).toBe('DISABLED');
    expect(listed?.disabled_reason).toMatch(/after 3 failed attempts.*HTTP 500/);
    const log = await rest(server.url, `/v1/webhooks/${endpoint.id}/deliveries?status=FAILED`, {
      key: server.key('PROFESSIONAL'),
    });
    const delivery = log.body.data[0];
    expect(delivery).toMatchObject({
      status: 'FAILED',
      attempts: 3,
      last_status_code: 500,
      last_error: 'HTTP 500',
      event_id: event!.id,
    });

    const refused = await rest(server.url, `/v1/webhook-deliveries/${delivery.id}/redeliver`, {
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
    const again = await rest(server.url, `/v1/webhook-deliveries/${delivery.id}/redeliver`, {
      method: 'POST',
      key: server.key('PROFESSIONAL'),
    });
    expect(again.status).toBe(202);
    await receiver.waitFor((r) => r.length >= 4);
    expect(receiver.received[3]!.json.id).toBe(event!.id);
  });

  it('works the same over GraphQL: the secret only in the registration result', async () => {
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
      ['GET', `/v1/webhooks/${endpoint.id}/deliveries`],
      ['POST', `/v1/webhooks/${endpoint.id}/enable`],
      ['DELETE', `/v1/webhooks/${endpoint.id}`],
      ['POST', '/v1/webhook-deliveries/00000000-0000-4000-8000-000000000000/redeliver'],
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

describe('webhook SSRF guard (WEBHOOK_ALLOW_PRIVATE=false)', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ env: { WEBHOOK_ALLOW_PRIVATE: 'false' } });
  });
  afterAll(() => server?.close());

  it('refuses loopback, private, link-local and metadata addresses, and writes nothing', async () => {
    for (const url of [
      'http://127.0.0.1:9/x',
      'http://localhost/x',
      'http://10.1.2.3/x',
      'http://192.168.0.10/x',
      'http://172.20.0.1/x',
      'http://169.254.169.254/latest/meta-data',
      'http://[::1]/x',
      'http://[::ffff:127.0.0.1]/x',
      'http://[fe80::1]/x',
      'http://0.0.0.0/x',
    ]) {
      const res = await rest(server.url, '/v1/webhooks', {
        method: 'POST',
        key: server.key('PROFESSIONAL'),
        body: { url, event_types: ['tier_change'] },
      });
      expect(res.status, url).toBe(400);
      expect(res.body.error.message, url).toMatch(
        /^url: resolves to .*(private, loopback or link-local|cloud metadata) address/,
      );
    }
    expect(await count(server, WebhookEndpoint)).toBe(0);
  });
});
