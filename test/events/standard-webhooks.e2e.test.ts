import { Webhook, WebhookVerificationError } from 'standardwebhooks';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { verifySignature } from '../../src/events/signature.js';
import { WebhookEndpoint } from '../../src/events/entities.js';
import { ManualClock, MINUTE } from '../../src/kernel/clock.js';
import { describeEachDialect } from '../helpers/env.js';
import { gql, rest, startTestServer, type TestServer } from '../helpers/server.js';
import { commitEvents, startReceiver, tierChange, type Received, type Receiver } from './helpers.js';

/** What a receiver built on the `standardwebhooks` library does with a delivery. */
function verifyStandard(secret: string, request: Received): unknown {
  return new Webhook(secret).verify(request.body, {
    'webhook-id': String(request.headers['webhook-id']),
    'webhook-timestamp': String(request.headers['webhook-timestamp']),
    'webhook-signature': String(request.headers['webhook-signature']),
  });
}

/**
 * Real deliveries to a real local receiver, verified with the `standardwebhooks` npm package.
 * The library checks the timestamp against the wall clock (5 minutes either way), so the
 * server's clock starts now and moves by minutes only.
 */
describeEachDialect('Standard Webhooks deliveries', (dialect) => {
  let server: TestServer;
  let receiver: Receiver;
  const clock = new ManualClock(new Date().toISOString());
  beforeAll(async () => {
    server = await startTestServer({ dialect, clock, env: { WEBHOOK_SECRET_OVERLAP: '2m' } });
    receiver = await startReceiver();
  });
  afterAll(async () => {
    await server?.close();
    await receiver?.close();
  });
  afterEach(async () => {
    receiver.received.length = 0;
    await server.database.db.em().nativeDelete(WebhookEndpoint, {});
  });

  it('signs every delivery as Standard Webhooks with the whsec_ form shown at registration, beside Tidegate-Signature', async () => {
    const key = server.key('PROFESSIONAL');
    const created = await rest(server.url, '/v1/webhooks', {
      method: 'POST',
      key,
      body: { url: receiver.url, event_types: ['tier_change'] },
    });
    expect(created.status, created.text).toBe(201);
    const { secret, standard_webhooks_secret: standard } = created.body as {
      secret: string;
      standard_webhooks_secret: string;
    };
    expect(standard).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(Buffer.from(standard.slice(6), 'base64')).toEqual(Buffer.from(secret.slice(6), 'base64url'));

    const [event] = await commitEvents(server, [tierChange('standard')]);
    const [request] = await receiver.waitFor((r) => r.length >= 1);
    expect(request!.headers['webhook-id']).toBe(event!.id);
    expect(request!.headers['webhook-timestamp']).toMatch(/^\d+$/);
    expect(request!.headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]{43}=$/);
    expect(verifyStandard(standard, request!)).toMatchObject({ id: event!.id, type: 'tier_change' });
    // The library refuses another secret, and a body changed on the way.
    const other = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;
    expect(() => verifyStandard(other, request!)).toThrow(WebhookVerificationError);
    expect(() => verifyStandard(standard, { ...request!, body: `${request!.body} ` })).toThrow(
      WebhookVerificationError,
    );
    // Existing receivers keep verifying Tidegate-Signature with the secret they have.
    const legacy = String(request!.headers['tidegate-signature']);
    expect(legacy).toBe(`t=${request!.headers['webhook-timestamp']},${legacy.split(',')[1]}`);
    expect(verifySignature(secret, request!.body, legacy, clock.now())).toBe(true);
  });

  it('signs with both secrets during a rotation (space-separated), then with the new one only', async () => {
    const created = await gql(
      server.url,
      'mutation($input: WebhookEndpointInput!) { createWebhookSubscription(input: $input) { standardWebhooksSecret endpoint { id } } }',
      {
        key: server.key('ANALYST'),
        variables: { input: { url: receiver.url, eventTypes: ['port_call.created'] } },
      },
    );
    const registration = created.body.data!.createWebhookSubscription as {
      standardWebhooksSecret: string;
      endpoint: { id: string };
    };
    const oldSecret = registration.standardWebhooksSecret;
    const rotated = await rest(
      server.url,
      `/v1/webhook-subscriptions/${registration.endpoint.id}/rotate-secret`,
      { method: 'POST', key: server.key('ANALYST') },
    );
    expect(rotated.status, rotated.text).toBe(200);
    const newSecret = rotated.body.standardWebhooksSecret as string;
    expect(newSecret).toMatch(/^whsec_/);
    expect(newSecret).not.toBe(oldSecret);

    const accountId = server.demo.accounts.find((a) => a.plan === 'ANALYST')!.accountId;
    const portCallCreated = { type: 'port_call.created', accountId, payload: { portCallId: 'pc-1' } };
    clock.advance(1 * MINUTE);
    await commitEvents(server, [portCallCreated]);
    const [during] = await receiver.waitFor((r) => r.length >= 1);
    expect(String(during!.headers['webhook-signature'])).toMatch(/^v1,\S{44} v1,\S{44}$/);
    expect(verifyStandard(newSecret, during!)).toMatchObject({ type: 'port_call.created' });
    expect(verifyStandard(oldSecret, during!)).toMatchObject({ type: 'port_call.created' });

    clock.advance(2 * MINUTE);
    await commitEvents(server, [portCallCreated]);
    const all = await receiver.waitFor((r) => r.length >= 2);
    expect(String(all[1]!.headers['webhook-signature'])).toMatch(/^v1,\S{44}$/);
    expect(verifyStandard(newSecret, all[1]!)).toMatchObject({ type: 'port_call.created' });
    expect(() => verifyStandard(oldSecret, all[1]!)).toThrow(/No matching signature/);
  });
});
