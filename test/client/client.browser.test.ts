import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { build } from 'esbuild';
import type { Browser as Chromium } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { launchChromium } from '../helpers/chromium.js';
import { describeWithChromium } from '../helpers/env.js';
import type { TestServer } from '../helpers/server.js';
import { PASSWORD } from '../auth/helpers.js';
import { commitEvents, tierChange } from '../events/helpers.js';
import { startClientServer } from './helpers.js';

/**
 * The dashboard page of the test: on `/` it starts sign-in, on `/callback` it finishes it, then
 * queries GraphQL, calls a /v1 route and subscribes. Its state is on `window.app` for the test.
 */
const APP = `
import { BrowserTokenStore, TidegateClient, TierChangedDocument, ViewerDocument } from './client.js';
const config = await (await fetch('/config.json')).json();
const client = new TidegateClient({
  baseUrl: config.api,
  oauth: { clientId: config.clientId, redirectUri: location.origin + '/callback', scope: config.scope },
  store: new BrowserTokenStore(sessionStorage),
  pendingStorage: sessionStorage,
});
const app = (window.app = { client, seen: [], errors: [], done: false });
if (location.pathname === '/') {
  location.assign(await client.authorizationUrl());
} else {
  try {
    await client.completeAuthorization(location.href);
    app.viewer = (await client.graphql(ViewerDocument)).viewer;
    app.vessel = await client.v1.vesselLookup({ imo: '9074729' });
    client.subscribe(TierChangedDocument, { slugs: ['alpha'] }, {
      next: (data) => app.seen.push(data.tierChanged.eventId),
      error: (e) => app.errors.push(e.code + ': ' + e.message),
    });
  } catch (e) {
    app.failure = e.code + ': ' + e.message;
  }
  app.done = true;
}
`;

describeWithChromium('TypeScript client in Chromium, on another origin', () => {
  let server: TestServer;
  let user: { email: string; accountId: string };
  let app: Server;
  let appOrigin: string;
  let browser: Chromium;
  const dir = mkdtempSync(join(tmpdir(), 'tidegate-browser-'));

  beforeAll(async () => {
    // The bundle a browser app would ship: the client and the typed documents it uses.
    await build({
      stdin: {
        contents: `export * from './src/client/index.ts';
          export { TierChangedDocument, ViewerDocument } from './src/generated/graphql.ts';`,
        resolveDir: resolve('.'),
        loader: 'ts',
      },
      bundle: true,
      format: 'esm',
      platform: 'browser',
      target: 'es2022',
      outfile: join(dir, 'client.js'),
      logLevel: 'silent',
    });
    writeFileSync(join(dir, 'app.js'), APP);
    const page =
      '<!doctype html><title>Harbour dashboard</title><script type="module" src="/app.js"></script>';
    app = createServer((req, res) => {
      const path = (req.url ?? '/').split('?')[0]!;
      if (path.endsWith('.js'))
        return res.writeHead(200, { 'content-type': 'text/javascript' }).end(readFileSync(join(dir, path)));
      if (path === '/config.json')
        return res
          .writeHead(200, { 'content-type': 'application/json' })
          .end(readFileSync(join(dir, 'config.json')));
      res.writeHead(200, { 'content-type': 'text/html' }).end(page);
    });
    await new Promise<void>((r) => app.listen(0, '127.0.0.1', r));
    appOrigin = `http://127.0.0.1:${(app.address() as AddressInfo).port}`;
    let publicClient: { client_id: string };
    ({ server, user, publicClient } = await startClientServer({
      env: { CORS_ORIGINS: appOrigin },
      redirectUri: `${appOrigin}/callback`,
    }));
    writeFileSync(
      join(dir, 'config.json'),
      JSON.stringify({
        api: server.url,
        clientId: publicClient.client_id,
        scope: 'read:vessels read:liquidity',
      }),
    );
    browser = await launchChromium();
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await new Promise((r) => app?.close(r));
    await server?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('signs in with code + PKCE, queries GraphQL and /v1 cross-origin, and keeps a subscription across forced refreshes with no event lost', async () => {
    const page = await (await browser.newContext()).newPage();
    const failures: string[] = [];
    page.on('pageerror', (e) => failures.push(e.message));
    // Failed loads are checked by URL below (the browser asks the API origin for a favicon).
    page.on(
      'console',
      (m) => m.type() === 'error' && !/Failed to load resource/.test(m.text()) && failures.push(m.text()),
    );
    page.on(
      'response',
      (r) =>
        r.status() >= 400 && !r.url().endsWith('/favicon.ico') && failures.push(`${r.status()} ${r.url()}`),
    );

    await page.goto(appOrigin);
    await page.waitForURL((url) => url.pathname === '/console/login');
    await page.fill('#email', user.email);
    await page.fill('#password', PASSWORD);
    await page.click('#sign-in');
    await page.waitForURL((url) => url.pathname === '/oauth/authorize');
    await page.click('#approve');
    await page.waitForURL((url) => url.href.startsWith(`${appOrigin}/callback`));
    await page.waitForFunction(() => (globalThis as never as { app?: { done: boolean } }).app?.done === true);

    type AppState = {
      failure?: string;
      viewer: { accountId: string; credentialKind: string };
      vessel: { name: string };
      seen: string[];
      errors: string[];
    };
    const state = () => page.evaluate(() => (globalThis as never as { app: AppState }).app);
    const first = await state();
    expect(first.failure).toBeUndefined();
    expect(first.viewer).toMatchObject({ accountId: user.accountId, credentialKind: 'oauth_token' });
    expect(first.vessel.name).toBe('Northern Tern');

    // The subscription is live once an event reaches it.
    const published: string[] = [];
    const publish = async () =>
      published.push(...(await commitEvents(server, [tierChange('alpha')])).map((e) => e.id));
    const seen = async () => (await state()).seen;
    for (let i = 0; i < 50 && (await seen()).length === 0; i++) {
      await publish();
      await new Promise((r) => setTimeout(r, 100));
    }
    // Events published before the subscription started are not owed to it: count from the first one seen.
    const [firstSeen] = await seen();
    expect(firstSeen).toBeDefined();
    const owed = () => published.slice(published.indexOf(firstSeen!));

    // Events keep coming while the page renews its token several times.
    const accessTokens = new Set<string>();
    const publishing = (async () => {
      for (let i = 0; i < 40; i++) {
        await publish();
        await new Promise((r) => setTimeout(r, 10));
      }
    })();
    for (let i = 0; i < 3; i++) {
      accessTokens.add(
        await page.evaluate(async () => {
          const { client } = (
            globalThis as never as { app: { client: { refresh(): Promise<{ accessToken: string }> } } }
          ).app;
          return (await client.refresh()).accessToken;
        }),
      );
    }
    await publishing;
    expect(accessTokens.size).toBe(3);
    let final: string[] = [];
    for (let i = 0; i < 100 && final.length < owed().length; i++) {
      final = await seen();
      if (final.length < owed().length) await new Promise((r) => setTimeout(r, 100));
    }
    // Every event published after the subscription went live arrived, once, in order.
    expect(owed().length).toBeGreaterThanOrEqual(41);
    expect(final).toEqual(owed());
    expect((await state()).errors).toEqual([]);
    expect(failures).toEqual([]);
  });
});
