import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { type Browser as Chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { Account } from '../../src/accounts/entities.js';
import { verifySignature } from '../../src/events/signature.js';
import { systemClock } from '../../src/kernel/clock.js';
import { createSandboxKey } from '../../src/playground/sandbox.js';
import { startReceiver, type Receiver } from '../events/helpers.js';
import { launchChromium } from '../helpers/chromium.js';
import { describeEachDialect, describeWithChromium } from '../helpers/env.js';
import { rest, type TestServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';
import {
  Browser,
  createAnalystUser,
  exchangeCode,
  PASSWORD,
  registerClient,
  startAuthServer,
  vesselStatus,
} from './helpers.js';

/** The same folder as console-pages.browser.test.ts (named in src/auth/README.md; ignored by git). */
const SCREENSHOTS = join(import.meta.dirname, 'screenshots');

describeWithChromium('console webhooks, keys and apps in headless Chromium', () => {
  let browser: Chromium;
  beforeAll(async () => {
    mkdirSync(SCREENSHOTS, { recursive: true });
    browser = await launchChromium();
  });
  afterAll(() => browser?.close());

  describeEachDialect('webhooks, sandbox keys and connected apps', (dialect) => {
    let server: TestServer;
    let receiver: Receiver;
    let page: Page;
    let user: { id: string; email: string; accountId: string };
    let endpoint: { id: string; secret: string };
    const cspViolations: string[] = [];

    beforeAll(async () => {
      // One attempt per delivery: a failure disables the endpoint at once, as after a run of failures.
      server = await startAuthServer({ dialect, env: { WEBHOOK_MAX_ATTEMPTS: '1', WEBHOOK_TIMEOUT: '2s' } });
      receiver = await startReceiver();
      user = await createAnalystUser(server, systemClock, `hooks-${dialect}@example.com`);
      const created = await rest(server.url, '/v1/webhook-subscriptions', {
        method: 'POST',
        key: server.key('ANALYST'),
        body: { url: receiver.url, eventTypes: ['port_call.created'], description: 'Ops receiver' },
      });
      expect(created.status, created.text).toBe(201);
      endpoint = { id: created.body.endpoint.id, secret: created.body.secret };
      const context = await browser.newContext({ viewport: { width: 1100, height: 900 } });
      page = await context.newPage();
      page.on('console', (message) => {
        if (/Content Security Policy/i.test(message.text())) cspViolations.push(message.text());
      });
      await page.goto(`${server.url}/console/login`);
      await page.fill('#email', user.email);
      await page.fill('#password', PASSWORD);
      await page.click('#sign-in');
      await page.waitForURL(`${server.url}/console`);
    });
    afterAll(async () => {
      await server?.close();
      await receiver?.close();
    });

    const shot = (name: string) =>
      page.screenshot({ path: join(SCREENSHOTS, `${name}-${dialect}.png`), fullPage: true });
    const endpointUrl = () => `${server.url}/console/webhooks/port-ops/${endpoint.id}`;
    /** Reloads the endpoint page until `done` holds for its text (deliveries are made in the background). */
    const reloadUntil = (done: (text: string) => boolean, what: string) =>
      waitFor(
        async () => {
          await page.goto(endpointUrl());
          return (await page.textContent('main')) ?? '';
        },
        done,
        { what, intervalMs: 200, timeoutMs: 15_000 },
      );

    it('lists both doors: the port-ops endpoint with its state, the liquidity door refused by plan', async () => {
      await page.goto(`${server.url}/console/webhooks`);
      const row = page.locator(`#door-port-ops tr[data-endpoint-id="${endpoint.id}"]`);
      expect(await row.textContent()).toContain(receiver.url);
      expect(await row.textContent()).toContain('active');
      expect(await page.textContent('#door-liquidity-refused')).toMatch(/requires the Professional plan/);
      await shot('webhooks');
    });

    it('sends a signed test event; a 500 disables the endpoint, shown with its reason', async () => {
      receiver.respond = () => 500;
      await page.goto(endpointUrl());
      await page.click('#send-test');
      expect(await page.textContent('#notice')).toContain('Test event queued');
      const [received] = await receiver.waitFor((all) => all.length === 1);
      expect(received!.json.type).toBe('webhook.test');
      expect(
        verifySignature(
          endpoint.secret,
          received!.body,
          String(received!.headers['tidegate-signature']),
          new Date(),
        ),
      ).toBe(true);
      await reloadUntil((text) => text.includes('disabled'), 'the endpoint to show as disabled');
      expect(await page.textContent('#endpoint-state')).toMatch(
        /disabled.*Disabled after 1 failed attempts/s,
      );
      expect(await page.textContent('#deliveries .attempt-status')).toBe('500');
      // A disabled endpoint offers no resend: re-enable first.
      expect(await page.locator('button.resend').count()).toBe(0);
    });

    it('re-enables the endpoint, resends the failed delivery and shows the new attempt', async () => {
      await page.click('#enable');
      expect(await page.textContent('#endpoint-state')).toContain('active');
      receiver.respond = () => 204;
      await page.click('button.resend');
      expect(await page.textContent('#notice')).toContain('Delivery queued again');
      await reloadUntil((text) => text.includes('DELIVERED'), 'the resent delivery to be delivered');
      const attempts = await page.locator('#deliveries tr.attempt .attempt-status').allTextContents();
      expect(attempts).toEqual(['500', '204']);
      expect(receiver.received).toHaveLength(2);
      expect(receiver.received[1]!.json.id).toBe(receiver.received[0]!.json.id);
      await shot('webhook-endpoint');
    });

    it('rotates the signing secret, shown once with the grace period', async () => {
      await page.goto(endpointUrl());
      await page.click('#rotate-secret');
      await page.waitForURL(/\/console\/shown-once$/);
      const secret = (await page.textContent('#webhook-secret'))!.trim();
      expect(secret).toMatch(/^whsec_/);
      expect(secret).not.toBe(endpoint.secret);
      expect(await page.textContent('[role=alert]')).toMatch(
        /signed with both the old and the new secret until \d{4}-/,
      );
      await shot('webhook-secret-rotated');
      await page.click('#back');
      expect(await page.textContent('#endpoint-secret')).toContain(
        'the previous secret still signs too until',
      );
    });

    it('revokes a sandbox key from Keys and apps: its next call is 401', async () => {
      const em = server.database.db.em();
      const owner = await em.findOneOrFail(Account, { id: user.accountId });
      const sandbox = await createSandboxKey({ em, clock: systemClock }, server.config, owner, user.email);
      const call = () => rest(server.url, '/v1/vessels/lookup?imo=9074729', { key: sandbox.secret });
      expect((await call()).status).toBe(200);
      await page.goto(`${server.url}/console`);
      const row = page.locator(`#sandbox-keys tr[data-key-id="${sandbox.key.id}"]`);
      expect(await row.locator('.key-status').textContent()).toMatch(/^expires \d{4}-/);
      expect(await row.textContent()).toContain('scopes');
      await shot('keys-and-apps');
      await row.locator('button.revoke-sandbox').click();
      await page.waitForURL(`${server.url}/console`);
      expect(
        await page.locator(`#sandbox-keys tr[data-key-id="${sandbox.key.id}"] .key-status`).textContent(),
      ).toMatch(/^revoked /);
      expect((await call()).status).toBe(401);
    });

    it('revokes a connected app: its token answers 401', async () => {
      const app = await registerClient(server, systemClock, {
        accountId: server.demo.accounts.find((a) => a.plan === 'INSTITUTIONAL')!.accountId,
        name: 'Harbour dashboard',
      });
      const signedIn = new Browser(server.url);
      await signedIn.login(user.email, PASSWORD);
      const tokens = await exchangeCode(server, user, app, { browser: signedIn });
      expect(await vesselStatus(server, tokens.access_token)).toBe(200);
      await page.goto(`${server.url}/console/apps`);
      const row = page.locator(`#apps tr[data-client-id="${app.client_id}"]`);
      expect(await row.textContent()).toContain('Harbour dashboard');
      expect(await row.textContent()).toContain('read:vessels');
      await shot('connected-apps');
      await row.locator('button.revoke-app').click();
      await page.waitForURL(/\/console\/apps\?revoked=/);
      expect(await page.textContent('#notice')).toContain(app.client_id);
      expect(await page.textContent('#apps-empty')).toContain('No app holds your tokens');
      expect(await vesselStatus(server, tokens.access_token)).toBe(401);
    });

    it('ran without a Content Security Policy violation', () => {
      expect(cspViolations).toEqual([]);
    });
  });
});
