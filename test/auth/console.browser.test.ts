import { createServer, type Server } from 'node:http';
import { type Browser as Chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { ApiKey } from '../../src/accounts/entities.js';
import { OAuthClient } from '../../src/auth/entities.js';
import { systemClock } from '../../src/kernel/clock.js';
import { launchChromium } from '../helpers/chromium.js';
import { describeWithChromium } from '../helpers/env.js';
import type { TestServer } from '../helpers/server.js';
import {
  authorizeUrl,
  createAnalystUser,
  PASSWORD,
  pkce,
  registerClient,
  startAuthServer,
} from './helpers.js';

describeWithChromium('console and consent in headless Chromium', () => {
  let server: TestServer;
  let browser: Chromium;
  let callback: Server;
  let callbackUrl: string;
  let user: { id: string; email: string; accountId: string };
  const cspViolations: string[] = [];

  beforeAll(async () => {
    server = await startAuthServer();
    user = await createAnalystUser(server, systemClock);
    // The client's redirect URI is a real local page, so the browser really lands on it.
    callback = createServer((_req, res) =>
      res.writeHead(200, { 'content-type': 'text/plain' }).end('callback reached'),
    );
    await new Promise<void>((resolve) => callback.listen(0, '127.0.0.1', resolve));
    const address = callback.address();
    callbackUrl = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}/callback`;
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await new Promise((resolve) => callback?.close(resolve));
    await server?.close();
  });

  async function newPage(): Promise<Page> {
    const context = await browser.newContext();
    const page = await context.newPage();
    page.on('console', (message) => {
      if (/Content Security Policy/i.test(message.text())) cspViolations.push(message.text());
    });
    return page;
  }

  /** The page's HTML once Chromium has finished navigating (Back may still be loading). */
  async function settledContent(page: Page): Promise<string> {
    for (let attempt = 0; ; attempt++) {
      await page.waitForLoadState('load').catch(() => undefined);
      try {
        return await page.content();
      } catch (e) {
        if (attempt >= 20 || !/navigating/.test((e as Error).message)) throw e;
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  }

  async function signIn(page: Page): Promise<void> {
    await page.fill('#email', user.email);
    await page.fill('#password', PASSWORD);
    await page.click('#sign-in');
  }

  it('shows this month’s API calls, and the number grows with the account’s calls', async () => {
    const page = await newPage();
    await page.goto(`${server.url}/console`);
    await signIn(page);
    await page.waitForURL(`${server.url}/console`);
    expect(await page.textContent('#plan')).toBe('Analyst');
    const usage = async () => Number(await page.textContent('#usage'));
    const before = await usage();
    expect(Number.isInteger(before)).toBe(true);
    const calls = 3;
    for (let i = 0; i < calls; i++) {
      const res = await fetch(`${server.url}/v1/vessels/lookup?imo=9074729`, {
        headers: { 'x-api-key': server.key('ANALYST') },
      });
      expect(res.status).toBe(200);
    }
    // Audit rows are written off the request path: flush, then read the page until they are counted.
    let after = before;
    for (let attempt = 0; attempt < 20 && after < before + calls; attempt++) {
      await server.app.services.audit.flush();
      await page.reload();
      after = await usage();
    }
    expect(after).toBe(before + calls);
  });

  it('registers an application: the secret is shown once after a redirect, with a warning, and never again; API keys likewise', async () => {
    const page = await newPage();
    await page.goto(`${server.url}/console`);
    expect(new URL(page.url()).pathname).toBe('/console/login');
    await signIn(page);
    await page.waitForURL(`${server.url}/console`);
    const registered = () =>
      server.database.db.em().count(OAuthClient, { name: 'Harbour dashboard', accountId: user.accountId });

    await page.fill('#client-name', 'Harbour dashboard');
    await page.fill('#redirect-uris', callbackUrl);
    await page.check('#register-client input[name=scopes][value="read:vessels"]');
    await page.check('#register-client input[name=scopes][value="read:port_calls"]');
    await page.click('#register');
    await page.waitForURL(`${server.url}/console/shown-once`);
    const clientId = (await page.textContent('#client-id'))!.trim();
    const secret = (await page.textContent('#client-secret'))!.trim();
    expect(clientId).toMatch(/^tgc_/);
    expect(secret).toMatch(/^tgcs_/);
    expect(await page.textContent('.warning')).toMatch(/shown only this once/);
    expect(await registered()).toBe(1);

    // A reload is a GET of the page the POST redirected to: no second registration, and the secret is gone.
    const reloaded = await page.reload();
    expect(reloaded!.status()).toBe(410);
    expect(await page.textContent('#gone')).toMatch(/already been shown/);
    expect(await page.content()).not.toContain(secret);
    expect(await registered()).toBe(1);

    await page.goto(`${server.url}/console`);
    const console = await page.content();
    expect(console).toContain(clientId);
    expect(console).toContain('Harbour dashboard');
    expect(console).not.toContain(secret);
    // Back lands on the shown-once page again (no-store, so it is fetched anew): still gone.
    await page.goBack();
    expect(await settledContent(page)).not.toContain(secret);
    expect(await page.textContent('#gone')).toMatch(/already been shown/);

    await page.goto(`${server.url}/console`);
    await page.click(`tr[data-client-id="${clientId}"] button:has-text("Rotate secret")`);
    await page.waitForURL(`${server.url}/console/shown-once`);
    const rotated = (await page.textContent('#client-secret'))!.trim();
    expect(rotated).toMatch(/^tgcs_/);
    expect(rotated).not.toBe(secret);
    await page.reload();
    expect(await page.content()).not.toContain(rotated);

    await page.goto(`${server.url}/console`);
    await page.fill('#key-name', 'Reporting job');
    await page.check('#create-key input[name=scopes][value="read:vessels"]');
    await page.click('#create-key-button');
    await page.waitForURL(`${server.url}/console/shown-once`);
    const apiKey = (await page.textContent('#api-key'))!.trim();
    expect(apiKey).toMatch(/^tg_/);
    await page.reload();
    expect(await page.content()).not.toContain(apiKey);
    expect(await server.database.db.em().count(ApiKey, { name: 'Reporting job' })).toBe(1);
    const lookup = await fetch(`${server.url}/v1/vessels/lookup?imo=9074729`, {
      headers: { 'x-api-key': apiKey },
    });
    expect(lookup.status).toBe(200);
    await page.goto(`${server.url}/console`);
    const withKey = await page.content();
    expect(withKey).toContain('Reporting job');
    expect(withKey).not.toContain(apiKey);

    await page.click(`tr:has-text("Reporting job") button:has-text("Revoke")`);
    await page.waitForURL(`${server.url}/console`);
    const revoked = await fetch(`${server.url}/v1/vessels/lookup?imo=9074729`, {
      headers: { 'x-api-key': apiKey },
    });
    expect(revoked.status).toBe(401);

    await page.click(`tr[data-client-id="${clientId}"] button:has-text("Delete")`);
    await page.waitForURL(`${server.url}/console`);
    expect(await page.content()).not.toContain(clientId);
    expect(cspViolations).toEqual([]);
  });

  it('signs in, shows every requested scope, approves to the redirect URI with code and state; Deny yields access_denied', async () => {
    const client = await registerClient(server, systemClock, {
      accountId: user.accountId,
      redirectUris: [callbackUrl],
      scopes: 'read:vessels read:port_calls read:service_orders',
    });
    const page = await newPage();
    const params = {
      client_id: client.client_id,
      redirect_uri: callbackUrl,
      scope: 'vessels:read read:port_calls read:service_orders',
      state: 'st-42',
      code_challenge: pkce().challenge,
    };
    await page.goto(`${server.url}${authorizeUrl(params)}`);
    expect(new URL(page.url()).pathname).toBe('/console/login');
    await signIn(page);
    await page.waitForURL((url) => url.pathname === '/oauth/authorize');
    const scopes = await page.$$eval('li[data-scope]', (items) => items.map((li) => li.textContent));
    expect(scopes).toEqual([
      'read:port_calls — Read port calls and related data',
      'read:service_orders — Read service orders',
      'read:vessels — Read vessel information',
    ]);
    await page.click('#approve');
    await page.waitForURL((url) => url.href.startsWith(callbackUrl));
    const approved = new URL(page.url());
    expect(approved.searchParams.get('code')).toBeTruthy();
    expect(approved.searchParams.get('state')).toBe('st-42');
    expect(await page.textContent('body')).toContain('callback reached');

    await page.goto(`${server.url}${authorizeUrl({ ...params, state: 'st-43' })}`);
    await page.click('#deny');
    await page.waitForURL((url) => url.href.startsWith(callbackUrl));
    const denied = new URL(page.url());
    expect(denied.searchParams.get('error')).toBe('access_denied');
    expect(denied.searchParams.get('state')).toBe('st-43');
    expect(denied.searchParams.get('code')).toBeNull();
    expect(cspViolations).toEqual([]);
  });
});
