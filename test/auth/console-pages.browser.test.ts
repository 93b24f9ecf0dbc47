import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { type Browser as Chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { systemClock } from '../../src/kernel/clock.js';
import { ensurePlaygroundBuilt } from '../../src/playground/build.js';
import { launchChromium } from '../helpers/chromium.js';
import { describeEachDialect, describeWithChromium } from '../helpers/env.js';
import { createKey, rest, type TestServer } from '../helpers/server.js';
import { createAnalystUser, PASSWORD, startAuthServer } from './helpers.js';

/** Where the test leaves a picture of each console page (named in src/auth/README.md; ignored by git). */
export const SCREENSHOTS = join(import.meta.dirname, 'screenshots');

describeWithChromium('console pages in headless Chromium', () => {
  let browser: Chromium;
  beforeAll(async () => {
    await ensurePlaygroundBuilt();
    mkdirSync(SCREENSHOTS, { recursive: true });
    browser = await launchChromium();
  });
  afterAll(() => browser?.close());

  describeEachDialect('usage, request log and lookup', (dialect) => {
    let server: TestServer;
    let page: Page;
    let key: { secret: string; id: string };
    const cspViolations: string[] = [];

    beforeAll(async () => {
      server = await startAuthServer({ dialect });
      const user = await createAnalystUser(server, systemClock, `console-${dialect}@example.com`);
      key = await createKey(server, { accountId: user.accountId, scopes: 'read:vessels' });
      const context = await browser.newContext({ viewport: { width: 1100, height: 900 } });
      page = await context.newPage();
      page.on('console', (message) => {
        if (/Content Security Policy/i.test(message.text())) cspViolations.push(message.text());
      });
      await page.goto(`${server.url}/console/usage`);
      await page.fill('#email', user.email);
      await page.fill('#password', PASSWORD);
      await page.click('#sign-in');
      await page.waitForURL(`${server.url}/console`);
    });
    afterAll(() => server?.close());

    const shot = (name: string) =>
      page.screenshot({ path: join(SCREENSHOTS, `${name}-${dialect}.png`), fullPage: true });
    let failedRequestId = '';

    it('draws the calls a key made in the usage chart, with the same numbers in the table', async () => {
      for (let i = 0; i < 3; i++) {
        const ok = await rest(server.url, '/v1/vessels/lookup?imo=9074729', { key: key.secret });
        expect(ok.status).toBe(200);
      }
      const bad = await rest(server.url, '/v1/vessels/lookup?imo=12', { key: key.secret });
      expect(bad.status).toBe(400);
      failedRequestId = bad.body.error.requestId;
      await server.app.services.audit.flush();

      await page.goto(`${server.url}/console/usage`);
      await page.waitForSelector('[data-usage][data-drawn="2"]');
      // uPlot draws on canvases: two charts, each with its legend naming the series.
      expect(await page.locator('#chart-per-day canvas').count()).toBeGreaterThan(0);
      expect(await page.textContent('#chart-per-day')).toContain('4xx');
      const today = new Date().toISOString().slice(0, 10);
      const row = page.locator(`#usage-days tr[data-date="${today}"] td`);
      const cells = await row.allTextContents();
      // Calls, succeeded, 4xx, 5xx: the key's four and the console's own reads (door console).
      expect(Number(cells[0])).toBeGreaterThanOrEqual(4);
      expect(Number(cells[1])).toBeGreaterThanOrEqual(3);
      expect(Number(cells[2])).toBe(1);
      expect(await page.textContent('#usage-operations')).toContain('GET /v1/vessels/lookup');
      expect(await page.textContent('#usage-outcomes')).toContain('BAD_USER_INPUT');
      await shot('usage');
    });

    it('lists the calls in the request log and filters them; a bad filter is named', async () => {
      await page.goto(`${server.url}/console/requests`);
      const log = await page.textContent('#request-log');
      expect(log).toContain('GET /v1/vessels/lookup');
      expect(log).toContain(failedRequestId);
      await shot('request-log');
      await page.selectOption('#outcome', 'CLIENT_ERROR');
      await page.click('#apply-filters');
      await page.waitForURL(/outcome=CLIENT_ERROR/);
      const ids = await page
        .locator('#request-log tbody tr')
        .evaluateAll((rows) => rows.map((r) => r.getAttribute('data-request-id')));
      expect(ids).toEqual([failedRequestId]);
      await page.fill('#status', 'abc');
      await page.click('#apply-filters');
      expect(await page.textContent('#error')).toBe("status: must be an HTTP status such as 404 (got 'abc')");
      await page.fill('#status', '42');
      await page.click('#apply-filters');
      expect(await page.textContent('#error')).toMatch(/^status: must be an HTTP status between 100 and 599/);
    });

    it('opens one call from a request id found in a 4xx body', async () => {
      await page.goto(`${server.url}/console/requests`);
      await page.fill('#request-id', failedRequestId);
      await page.click('#lookup-button');
      await page.waitForURL(/\/console\/request\?id=/);
      expect(await page.textContent('#call-status')).toBe('400');
      expect(await page.textContent('#call-code')).toBe('BAD_USER_INPUT');
      expect(await page.textContent('#call-door')).toBe('rest');
      expect(await page.textContent('#call-credential')).toContain(key.id);
      await shot('request');
      await page.fill('#request-id', 'no-such-request');
      await page.click('#lookup-button');
      expect(await page.textContent('#error')).toBe("request 'no-such-request' was not found");
    });

    it('ran without a Content Security Policy violation', () => {
      expect(cspViolations).toEqual([]);
    });
  });
});
