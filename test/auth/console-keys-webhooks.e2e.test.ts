import { afterAll, beforeAll, expect, it } from 'vitest';
import { Account, ApiKey } from '../../src/accounts/entities.js';
import { WebhookEndpoint, WebhookEndpointStatus } from '../../src/events/entities.js';
import { verifySignature } from '../../src/events/signature.js';
import { systemClock } from '../../src/kernel/clock.js';
import { createSandboxKey } from '../../src/playground/sandbox.js';
import { startReceiver, untilListening, wsSession, type Receiver } from '../events/helpers.js';
import { describeEachDialect } from '../helpers/env.js';
import { createKey, gql, rest, type TestServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';
import {
  Browser,
  createAnalystUser,
  exchangeCode,
  hiddenValue,
  PASSWORD,
  registerClient,
  startAuthServer,
  vesselStatus,
} from './helpers.js';

const SEND_TEST = `mutation ($id: ID!) { sendTestWebhookSubscriptionEvent(id: $id) { id eventType status } }`;

/**
 * The schema's additions for the console's Webhooks and Keys and apps pages, over GraphQL and
 * through the console's forms: each refusal (unknown, another account's, disabled, missing scope,
 * wrong credential, bad input) with its status and a message naming the problem.
 */
describeEachDialect('console additions to the schema: webhook test events, keys and apps', (dialect) => {
  let server: TestServer;
  let receiver: Receiver;
  let analyst: { id: string; email: string; accountId: string };
  let signedIn: Browser;
  let csrf: string;

  beforeAll(async () => {
    server = await startAuthServer({ dialect });
    receiver = await startReceiver();
    analyst = await createAnalystUser(server, systemClock, `additions-${dialect}@example.com`);
    signedIn = new Browser(server.url);
    expect((await signedIn.login(analyst.email, PASSWORD)).status).toBe(303);
    csrf = hiddenValue(await (await signedIn.fetch('/console')).text(), 'csrf');
  });
  afterAll(async () => {
    await server?.close();
    await receiver?.close();
  });

  const analystKey = () => server.key('ANALYST');

  async function subscribe(key = analystKey()): Promise<{ id: string; secret: string }> {
    const res = await rest(server.url, '/v1/webhook-subscriptions', {
      method: 'POST',
      key,
      body: { url: receiver.url, eventTypes: ['port_call.created'] },
    });
    expect(res.status, res.text).toBe(201);
    return { id: res.body.endpoint.id, secret: res.body.secret };
  }

  it('sends a signed webhook.test event to that endpoint only, through the outbox', async () => {
    const endpoint = await subscribe();
    const other = await subscribe();
    const res = await gql(server.url, SEND_TEST, { key: analystKey(), variables: { id: endpoint.id } });
    expect(res.body.errors).toBeUndefined();
    expect(res.body.data!.sendTestWebhookSubscriptionEvent).toMatchObject({
      eventType: 'webhook.test',
      status: 'PENDING',
    });
    const [received] = await receiver.waitFor((all) => all.some((r) => r.json.type === 'webhook.test'));
    const test = receiver.received.filter((r) => r.json.type === 'webhook.test');
    expect(test).toHaveLength(1);
    expect(received!.json.data).toMatchObject({ test: true, endpoint_id: endpoint.id });
    expect(
      verifySignature(
        endpoint.secret,
        received!.body,
        String(received!.headers['tidegate-signature']),
        new Date(),
      ),
    ).toBe(true);
    expect(received!.headers['webhook-id']).toBe(received!.json.id);
    expect(other.id).not.toBe(endpoint.id);
    const delivery = res.body.data!.sendTestWebhookSubscriptionEvent as { id: string };
    const log = await waitFor(
      () =>
        gql(
          server.url,
          `query ($id: ID!) { webhookSubscriptionDelivery(id: $id) { status attemptLog { statusCode } } }`,
          { key: analystKey(), variables: { id: delivery.id } },
        ),
      (r) =>
        (r.body.data?.webhookSubscriptionDelivery as { status: string } | undefined)?.status === 'DELIVERED',
      { what: 'the test delivery to be recorded as delivered' },
    );
    expect((log.body.data!.webhookSubscriptionDelivery as { attemptLog: unknown[] }).attemptLog).toEqual([
      { statusCode: 200 },
    ]);
  });

  it('refuses a test event: unknown id, another account’s, disabled (409), missing scope (403), below the plan (402)', async () => {
    const unknown = await gql(server.url, SEND_TEST, {
      key: analystKey(),
      variables: { id: '00000000-0000-4000-8000-000000000000' },
    });
    expect(unknown.body.errors![0]!.extensions!.code).toBe('NOT_FOUND');
    expect(unknown.body.errors![0]!.message).toBe(
      "Webhook subscription '00000000-0000-4000-8000-000000000000' was not found",
    );

    const theirs = await subscribe(server.key('INSTITUTIONAL'));
    const foreign = await gql(server.url, SEND_TEST, { key: analystKey(), variables: { id: theirs.id } });
    expect(foreign.body.errors![0]!.extensions!.code).toBe('NOT_FOUND');

    const paused = await subscribe();
    await server.database.db
      .em()
      .nativeUpdate(
        WebhookEndpoint,
        { id: paused.id },
        { status: WebhookEndpointStatus.DISABLED, disabledReason: 'Disabled after 3 failed attempts' },
      );
    const disabled = await gql(server.url, SEND_TEST, { key: analystKey(), variables: { id: paused.id } });
    expect(disabled.body.errors![0]!.extensions!.code).toBe('CONFLICT');
    expect(disabled.body.errors![0]!.message).toBe(
      `Webhook endpoint ${paused.id} is disabled (Disabled after 3 failed attempts); enable it first`,
    );
    const viaRest = await rest(server.url, `/v1/webhook-subscriptions/${paused.id}`, { key: analystKey() });
    expect(viaRest.body.status).toBe('DISABLED');

    const narrow = await createKey(server, { accountId: analyst.accountId, scopes: 'read:port_calls' });
    const noScope = await gql(server.url, SEND_TEST, { key: narrow.secret, variables: { id: paused.id } });
    expect(noScope.status).toBe(403);
    expect(noScope.body.errors![0]!.message).toBe('Missing required scope: webhooks:manage');

    const liquidity = await gql(server.url, `mutation ($id: ID!) { sendTestWebhookEvent(id: $id) { id } }`, {
      key: analystKey(),
      variables: { id: paused.id },
    });
    expect(liquidity.body.errors![0]!.extensions!.code).toBe('PLAN_REQUIRED');
  });

  it('keeps keys and apps to console sessions: no key can hold the scope, and an API key gets 403, even with admin', async () => {
    const admin = await createKey(server, { accountId: analyst.accountId, scopes: 'admin' });
    // The service every door (console, schema, CLI) creates keys through refuses the session-only scope,
    // before anything is written.
    const keysBefore = await server.database.db.em().count(ApiKey, { account: analyst.accountId });
    await expect(
      createKey(server, { accountId: analyst.accountId, scopes: 'read:port_calls credentials:manage' }),
    ).rejects.toThrow('credentials:manage belongs to console sessions only');
    expect(await server.database.db.em().count(ApiKey, { account: analyst.accountId })).toBe(keysBefore);
    for (const query of [
      '{ apiKeys { id } }',
      '{ sandboxKeys { id } }',
      '{ oauthApps { clientId } }',
      '{ connectedApps { clientId } }',
      'mutation { revokeSandboxKey(id: "x") { id } }',
      'mutation { rotateOAuthAppSecret(clientId: "x") { clientSecret } }',
      'mutation { updateOAuthAppRedirectUris(clientId: "x", redirectUris: []) { clientId } }',
      'mutation { revokeConnectedApp(clientId: "x") { clientId } }',
      'mutation { createApiKey(input: { name: "k" }) { secret } }',
      'mutation { rotateApiKey(id: "x") { secret } }',
      'mutation { revokeApiKey(id: "x") { id } }',
      'mutation { registerOAuthApp(input: { name: "a", redirectUris: [], scopes: [], confidential: true }) { clientSecret } }',
      'mutation { deleteOAuthApp(clientId: "x") { clientId } }',
    ]) {
      const plain = await gql(server.url, query, { key: analystKey() });
      expect(plain.status, query).toBe(403);
      expect(plain.body.errors![0]!.message, query).toBe('Missing required scope: credentials:manage');
      const res = await gql(server.url, query, { key: admin.secret });
      expect(res.body.errors![0]!.extensions!.code, query).toBe('FORBIDDEN');
      expect(res.body.errors![0]!.message, query).toMatch(
        /can be managed only by a signed-in user \(the console's session\), not with an API key$/,
      );
    }
  });

  it('refuses console actions on unknown and other accounts’ keys and apps with 404, bad redirect URIs with 400', async () => {
    const em = server.database.db.em();
    const owner = await em.findOneOrFail(Account, {
      id: server.demo.accounts.find((a) => a.plan === 'INSTITUTIONAL')!.accountId,
    });
    const foreignSandbox = await createSandboxKey(
      { em, clock: systemClock },
      server.config,
      owner,
      'x@example.com',
    );
    const foreignClient = await registerClient(server, systemClock, { accountId: owner.id });

    const unknownKey = await signedIn.post(
      '/console/sandbox-keys/00000000-0000-4000-8000-000000000000/revoke',
      {
        csrf,
      },
    );
    expect(unknownKey.status).toBe(404);
    expect(await unknownKey.text()).toContain(
      'Sandbox key &#39;00000000-0000-4000-8000-000000000000&#39; was not found',
    );
    const foreignKey = await signedIn.post(`/console/sandbox-keys/${foreignSandbox.key.id}/revoke`, { csrf });
    expect(foreignKey.status).toBe(404);
    expect(
      await rest(server.url, '/v1/vessels/lookup?imo=9074729', { key: foreignSandbox.secret }).then(
        (r) => r.status,
      ),
    ).toBe(200);

    for (const action of ['rotate-secret', 'redirect-uris']) {
      const unknown = await signedIn.post(`/console/clients/tgc_unknown/${action}`, {
        csrf,
        redirect_uris: 'https://a.example/cb',
      });
      expect(unknown.status, action).toBe(404);
      expect(await unknown.text()).toContain('OAuth client &#39;tgc_unknown&#39; was not found');
      const foreign = await signedIn.post(`/console/clients/${foreignClient.client_id}/${action}`, {
        csrf,
        redirect_uris: 'https://a.example/cb',
      });
      expect(foreign.status, action).toBe(404);
    }

    const mine = await registerClient(server, systemClock, { accountId: analyst.accountId, name: 'Mine' });
    const bad = await signedIn.post(`/console/clients/${mine.client_id}/redirect-uris`, {
      csrf,
      redirect_uris: 'http://app.example/callback',
    });
    expect(bad.status).toBe(400);
    expect(await bad.text()).toContain(
      'redirectUris: &#39;http://app.example/callback&#39; must use https (http is allowed only for localhost and loopback addresses)',
    );
    const none = await signedIn.post(`/console/clients/${mine.client_id}/redirect-uris`, {
      csrf,
      redirect_uris: '',
    });
    expect(none.status).toBe(400);
    expect(await none.text()).toContain(
      'redirectUris: at least one redirect URI is required for authorization_code',
    );
    const good = await signedIn.post(`/console/clients/${mine.client_id}/redirect-uris`, {
      csrf,
      redirect_uris: 'https://app.example/callback\nhttp://127.0.0.1/cb',
    });
    expect(good.status).toBe(303);
    const page = await (await signedIn.fetch('/console')).text();
    expect(page).toContain('https://app.example/callback\nhttp://127.0.0.1/cb');

    const unknownApiKey = await signedIn.post('/console/keys/00000000-0000-4000-8000-000000000000/revoke', {
      csrf,
    });
    expect(unknownApiKey.status).toBe(404);
    const sessionOnly = await signedIn.post('/console/keys', {
      csrf,
      name: 'k',
      scopes: 'credentials:manage',
    });
    expect(sessionOnly.status).toBe(400);
    expect(await sessionOnly.text()).toContain('scopes: credentials:manage belongs to console sessions only');
    const foreignDelete = await signedIn.post(`/console/clients/${foreignClient.client_id}/delete`, { csrf });
    expect(foreignDelete.status).toBe(404);

    const noApp = await signedIn.post('/console/apps/tgc_unknown/revoke', { csrf });
    expect(noApp.status).toBe(404);
    expect(await noApp.text()).toContain('Connected app &#39;tgc_unknown&#39; was not found');
    // An app that holds no token of this user is not one of their connected apps.
    const notConnected = await signedIn.post(`/console/apps/${foreignClient.client_id}/revoke`, { csrf });
    expect(notConnected.status).toBe(404);

    const noCsrf = await signedIn.post(`/console/apps/${foreignClient.client_id}/revoke`, {});
    expect(noCsrf.status).toBe(403);
  });

  it('revokes a connected app for this user only: its tokens answer 401, another user’s grant keeps working', async () => {
    const app = await registerClient(server, systemClock, {
      accountId: server.demo.accounts.find((a) => a.plan === 'INSTITUTIONAL')!.accountId,
      name: 'Third-party app',
    });
    const mine = await exchangeCode(server, analyst, app, {
      browser: signedIn,
      scope: 'read:vessels read:port_calls',
    });
    const other = await createAnalystUser(server, systemClock, `other-${dialect}@example.com`);
    const theirs = await exchangeCode(server, other, app);
    expect(await vesselStatus(server, mine.access_token)).toBe(200);

    const listed = await (await signedIn.fetch('/console/apps')).text();
    expect(listed).toContain('Third-party app');
    expect(listed).toContain('read:vessels');

    const listeners = () => server.app.services.bus.listenerCount;
    const before = listeners();
    const live = wsSession(server.url, { authorization: `Bearer ${mine.access_token}` });
    const sub = live.subscribe('subscription { portCallUpdated { portCallId } }');
    await untilListening(() => listeners() >= before + 1, 5_000, sub);

    const revoked = await signedIn.post(`/console/apps/${app.client_id}/revoke`, { csrf });
    expect(revoked.status).toBe(303);
    // The live connection opened with the revoked token ends, as for any revocation.
    expect((await live.closed).code).toBe(4403);
    expect(await vesselStatus(server, mine.access_token)).toBe(401);
    expect(await vesselStatus(server, theirs.access_token)).toBe(200);
    const refresh = await fetch(`${server.url}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'refresh_token',
        refresh_token: mine.refresh_token,
        client_id: app.client_id,
        client_secret: app.client_secret!,
      }),
    });
    expect(refresh.status).toBe(400);
    expect(await (await signedIn.fetch('/console/apps')).text()).toContain('No app holds your tokens');
  });
});
