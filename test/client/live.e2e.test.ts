import WebSocket from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryTokenStore, TidegateClient, type TidegateError } from '../../src/client/index.js';
import type { WebSocketConstructor } from '../../src/client/index.js';
import { TierChangedDocument, type TierChangedSubscription } from '../../src/generated/graphql.js';
import { createKey, type TestServer } from '../helpers/server.js';
import { eventually } from '../events/helpers.js';
import { commitEvents, tierChange } from '../events/helpers.js';
import { postForm } from '../auth/helpers.js';
import { approve, CLIENT_SCOPES, startClientServer } from './helpers.js';

const WS = WebSocket as unknown as WebSocketConstructor;

describe('subscriptions across a credential refresh (graphql-ws ping {"refresh"})', () => {
  let server: TestServer;
  let user: { email: string; accountId: string };
  let publicClient: { client_id: string };
  let redirectUri: string;

  beforeAll(async () => {
    ({ server, user, publicClient, redirectUri } = await startClientServer());
  });
  afterAll(() => server?.close());

  async function signedIn() {
    const client = new TidegateClient({
      baseUrl: server.url,
      oauth: { clientId: publicClient.client_id, redirectUri, scope: CLIENT_SCOPES },
      WebSocket: WS,
    });
    await client.completeAuthorization(await approve(server, user.email, await client.authorizationUrl()));
    return client;
  }

  function watch(client: TidegateClient, slug: string) {
    const seen: TierChangedSubscription[] = [];
    const errors: TidegateError[] = [];
    const stop = client.subscribe(
      TierChangedDocument,
      { slugs: [slug] },
      { next: (data) => seen.push(data), error: (e) => errors.push(e) },
    );
    return { seen, errors, stop };
  }

  /** Publishes one event at a time until the subscription has seen it (it is listening from then on). */
  async function untilLive(slug: string, seen: unknown[]) {
    for (let i = 0; i < 50 && seen.length === 0; i++) {
      await commitEvents(server, [tierChange(slug)]);
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(seen.length).toBeGreaterThan(0);
    return seen.length;
  }

  it('keeps every event while the token is refreshed repeatedly, on the same connection', async () => {
    const client = await signedIn();
    const live = watch(client, 'alpha');
    const warmup = await untilLive('alpha', live.seen);
    const connections = server.app.ws.connectionCount;
    const published = 60;
    const publishing = (async () => {
      for (let i = 0; i < published; i++) {
        await commitEvents(server, [tierChange('alpha')]);
        if (i % 10 === 0) await new Promise((r) => setTimeout(r, 5));
      }
    })();
    const tokens = new Set<string>();
    for (let i = 0; i < 4; i++) tokens.add((await client.refresh()).accessToken);
    await publishing;
    expect(tokens.size).toBe(4);
    await eventually(
      () => live.seen.length >= warmup + published,
      () => `saw ${live.seen.length - warmup} of ${published}`,
    );
    expect(live.seen.length).toBe(warmup + published);
    expect(live.errors).toEqual([]);
    expect(server.app.ws.connectionCount).toBe(connections);
    live.stop();
    client.close();
  });

  it('renews before expiry on its own while a subscription is open, and the connection takes the new token', async () => {
    const store = new MemoryTokenStore();
    const frames: string[] = [];
    /** Records the frames of the connection, to see the renewal handed over and acknowledged. */
    class RecordingWebSocket extends WebSocket {
      constructor(url: string, protocols?: string | string[]) {
        super(url, protocols);
        this.addEventListener('message', (event) => frames.push(`in ${String(event.data)}`));
      }
      override send(data: string): void {
        frames.push(`out ${data}`);
        super.send(data);
      }
    }
    const client = new TidegateClient({
      baseUrl: server.url,
      oauth: { clientId: publicClient.client_id, redirectUri, scope: CLIENT_SCOPES },
      store,
      WebSocket: RecordingWebSocket as unknown as WebSocketConstructor,
      // Tokens live 3600 s: renewal falls due 2 s after sign-in.
      refreshSkewMs: 3600_000 - 2000,
    });
    await client.completeAuthorization(await approve(server, user.email, await client.authorizationUrl()));
    const signedInWith = store.load()!.accessToken;
    const live = watch(client, 'epsilon');
    await untilLive('epsilon', live.seen);
    await eventually(() => store.load()?.accessToken !== signedInWith, 'no renewal before expiry');
    const renewed = store.load()!.accessToken;
    const handedOver = () => {
      const ping = frames.indexOf(`out ${JSON.stringify({ type: 'ping', payload: { refresh: renewed } })}`);
      return ping >= 0 && frames.slice(ping).some((f) => f.startsWith('in {"type":"pong"'));
    };
    await eventually(handedOver, () => `renewal not acknowledged: ${frames.slice(-4).join(' | ')}`);
    // The connection now holds the renewed token: revoking the first one leaves it open.
    await postForm(server, '/oauth/revoke', { token: signedInWith, client_id: publicClient.client_id });
    const before = live.seen.length;
    await commitEvents(server, [tierChange('epsilon')]);
    await eventually(() => live.seen.length > before, 'event after the renewal');
    expect(live.errors).toEqual([]);
    client.close();
  });

  it('after a refresh the connection holds the new token: revoking the old one changes nothing, revoking the new one closes it (4403)', async () => {
    const client = await signedIn();
    const live = watch(client, 'beta');
    await untilLive('beta', live.seen);
    const old = await client.session!.accessToken();
    const fresh = await client.refresh();
    // The connection now holds the new token: revoking the one it opened with changes nothing.
    await postForm(server, '/oauth/revoke', { token: old!, client_id: publicClient.client_id });
    const before = live.seen.length;
    await commitEvents(server, [tierChange('beta')]);
    await eventually(() => live.seen.length > before, 'event after revoking the old token');
    expect(live.errors).toEqual([]);
    await postForm(server, '/oauth/revoke', { token: fresh.accessToken, client_id: publicClient.client_id });
    await eventually(() => live.errors.length > 0, 'connection not closed');
    expect(live.errors[0]).toMatchObject({ code: 'FORBIDDEN', details: { closeCode: 4403 } });
    client.close();
  });

  it('refuses a credential of another account, a forged one, or a narrower one: 4403, subscriptions end', async () => {
    const institutional = server.demo.accounts.find((a) => a.plan === 'INSTITUTIONAL')!.accountId;
    const cases: Array<[string, () => Promise<string>]> = [
      ['another account', async () => (await createKey(server, { accountId: institutional })).secret],
      ['a forged credential', async () => 'tg_live_forged'],
      [
        'fewer scopes',
        async () => (await createKey(server, { plan: 'ANALYST', scopes: 'read:vessels' })).secret,
      ],
    ];
    for (const [name, credential] of cases) {
      const client = new TidegateClient({
        baseUrl: server.url,
        apiKey: server.key('ANALYST'),
        WebSocket: WS,
      });
      const live = watch(client, 'gamma');
      await untilLive('gamma', live.seen);
      await expect(client.setApiKey(await credential()), name).rejects.toMatchObject({ code: 'FORBIDDEN' });
      expect(live.errors[0], name).toMatchObject({ code: 'FORBIDDEN', details: { closeCode: 4403 } });
      expect(String(live.errors[0]!.details.reason), name).toBe('Credential refresh refused');
      client.close();
    }
  });

  it('reports a subscription it cannot start: not signed in (4401), or refused by the server (its code)', async () => {
    const signedOut = new TidegateClient({
      baseUrl: server.url,
      oauth: { clientId: publicClient.client_id, redirectUri },
      WebSocket: WS,
    });
    const notSignedIn = watch(signedOut, 'alpha');
    await eventually(() => notSignedIn.errors.length > 0, 'no error when signed out');
    expect(notSignedIn.errors[0]).toMatchObject({ code: 'UNAUTHENTICATED', details: { closeCode: 4401 } });

    const narrow = await createKey(server, { plan: 'ANALYST', scopes: 'read:vessels' });
    const client = new TidegateClient({ baseUrl: server.url, apiKey: narrow.secret, WebSocket: WS });
    const refused = watch(client, 'alpha');
    await eventually(() => refused.errors.length > 0, 'no error for a missing scope');
    expect(refused.errors[0]).toMatchObject({ code: 'FORBIDDEN' });
    expect(refused.errors[0]!.message).toMatch(/read:liquidity/);
    client.close();
  });

  it('API-key mode: a rotated key of the same account is taken in band, events keep flowing', async () => {
    const client = new TidegateClient({ baseUrl: server.url, apiKey: server.key('ANALYST'), WebSocket: WS });
    const live = watch(client, 'delta');
    const warmup = await untilLive('delta', live.seen);
    const analyst = server.demo.accounts.find((a) => a.plan === 'ANALYST')!.accountId;
    await client.setApiKey((await createKey(server, { accountId: analyst })).secret);
    await commitEvents(server, [tierChange('delta'), tierChange('delta')]);
    await eventually(() => live.seen.length >= warmup + 2, 'events after the key change');
    expect(live.errors).toEqual([]);
    client.close();
  });
});
