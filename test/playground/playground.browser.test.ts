import { type Browser as Chromium, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, beforeEach, expect, it } from 'vitest';
import { systemClock } from '../../src/kernel/clock.js';
import { ensurePlaygroundBuilt } from '../../src/playground/build.js';
import { createAnalystUser, PASSWORD, startAuthServer } from '../auth/helpers.js';
import { launchChromium } from '../helpers/chromium.js';
import { describeWithChromium } from '../helpers/env.js';
import { gql, type Json, type TestServer } from '../helpers/server.js';

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '[::1]']);

describeWithChromium('the playground in headless Chromium with the network cut off', () => {
  let server: TestServer;
  let browser: Chromium;
  let context: BrowserContext;
  let user: { id: string; email: string; accountId: string };
  /** Requests the page tried to make beyond this machine: there must be none. */
  const offMachine: string[] = [];
  const problems: string[] = [];
  /** Responses of 400 and above, as "status path". */
  const failed: string[] = [];

  beforeAll(async () => {
    await ensurePlaygroundBuilt();
    server = await startAuthServer();
    user = await createAnalystUser(server, systemClock);
    browser = await launchChromium([
      // The network is cut: everything but loopback (which Chromium never proxies) goes to a dead proxy.
      '--proxy-server=127.0.0.1:9',
    ]);
    context = await browser.newContext();
    // Belt and braces: every non-loopback request is recorded and aborted, whatever the proxy does.
    await context.route('**/*', (route) => {
      const url = new URL(route.request().url());
      if (url.protocol === 'data:' || LOOPBACK.has(url.hostname)) return route.continue();
      offMachine.push(url.href);
      return route.abort('internetdisconnected');
    });
  });
  afterAll(async () => {
    await browser?.close();
    await server?.close();
  });
  beforeEach(() => {
    offMachine.length = 0;
    problems.length = 0;
    failed.length = 0;
  });

  async function newPage(): Promise<Page> {
    const page = await context.newPage();
    page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
    page.on('console', (message) => {
      // Failed loads are collected with their URL below, where the expected 404 can be told apart.
      if (/^Failed to load resource/.test(message.text())) return;
      if (message.type() === 'error' || /Content Security Policy/i.test(message.text()))
        problems.push(`console ${message.type()}: ${message.text()}`);
    });
    page.on('response', (response) => {
      if (response.status() >= 400) failed.push(`${response.status()} ${new URL(response.url()).pathname}`);
    });
    return page;
  }

  /** The text of a CodeMirror editor (GraphiQL's editors render only visible lines as DOM). */
  const editorValue = (page: Page, selector: string) =>
    page.$eval(`${selector} .CodeMirror`, (el) =>
      (el as unknown as { CodeMirror: { getValue(): string } }).CodeMirror.getValue(),
    );

  async function setQuery(page: Page, query: string): Promise<void> {
    await page.$eval(
      '.graphiql-query-editor .CodeMirror',
      (el, text) =>
        (el as unknown as { CodeMirror: { setValue(v: string): void } }).CodeMirror.setValue(text),
      query,
    );
  }

  /** Runs the query in the IDE and returns the response pane once it shows `expected`. */
  async function run(page: Page, expected: string): Promise<string> {
    await page.click('.graphiql-execute-button');
    let shown = '';
    for (let attempt = 0; attempt < 150 && !shown.includes(expected); attempt++) {
      if (attempt > 0) await page.waitForTimeout(100);
      shown = await editorValue(page, '.graphiql-response');
    }
    expect(shown).toContain(expected);
    return shown;
  }

  it('really has no network: a request off this machine fails and is recorded', async () => {
    const page = await newPage();
    await expect(page.goto('http://203.0.113.7/probe')).rejects.toThrow(/ERR_INTERNET_DISCONNECTED/);
    expect(offMachine).toEqual(['http://203.0.113.7/probe']);
    // Closed: Chromium may reload a failed page on its own, which the next test would record.
    await page.close();
  });

  it('loads from GET /graphql with schema docs and autocomplete; after sign-in one click gives a sandbox key the IDE uses at once', async () => {
    const page = await newPage();
    const response = await page.goto(`${server.url}/graphql`);
    expect(response!.status()).toBe(200);
    await page.waitForSelector('.graphiql-container');
    expect(await page.textContent('#sign-in')).toBe('Sign in');

    // Schema docs: the introspected schema is browsable.
    await page.click('button[aria-label="Show Documentation Explorer"]');
    await page.click('.graphiql-doc-explorer a:has-text("Query")');
    await page.waitForSelector('.graphiql-doc-explorer :text("portCalls")');

    // Autocomplete: typing a field prefix offers the schema's fields.
    await setQuery(page, '{\n  portC');
    await page.click('.graphiql-query-editor .CodeMirror-line >> nth=1');
    await page.keyboard.press('End');
    await page.keyboard.press('Control+Space');
    await page.waitForSelector('.CodeMirror-hints :text("portCalls")');
    await page.keyboard.press('Escape');

    await page.click('#sign-in');
    await page.waitForURL((url) => url.pathname === '/console/login');
    await page.fill('#email', user.email);
    await page.fill('#password', PASSWORD);
    await page.click('#sign-in');
    await page.waitForURL(`${server.url}/playground`);
    await page.waitForSelector('.graphiql-container');
    expect(await page.textContent('#signed-in-as')).toContain(user.email);

    await page.click('#generate-sandbox-key');
    await page.waitForSelector('#sandbox-key');
    const key = (await page.textContent('#sandbox-key'))!.trim();
    expect(key).toMatch(/^tg_sandbox_/);
    expect(
      JSON.parse(await editorValue(page, '.graphiql-editor-tool .graphiql-editor:not(.hidden)')),
    ).toEqual({ 'X-API-Key': key });

    // The default query runs with the key at once, on the sandbox's demo data.
    await setQuery(
      page,
      '{ viewer { accountName } portCalls(first: 3) { totalCount edges { node { voyageReference } } } }',
    );
    const result = JSON.parse(await run(page, 'SANDBOX-00')) as Json;
    expect(result.data.viewer.accountName).toBe('Demo Analyst (sandbox)');
    expect(result.data.portCalls.totalCount).toBe(6);

    // A real account's port call does not exist for the sandbox key: not in the IDE, not over REST.
    const created = await gql(
      server.url,
      `mutation { createPortCall(input: { vesselImo: "9074729", portLocode: "SGSIN", voyageReference: "REAL-BROWSER",
         eta: "${new Date(Date.now() + 86_400_000).toISOString()}" }) { id } }`,
      { key: server.key('ANALYST') },
    );
    const realId = (created.body.data!.createPortCall as Json).id as string;
    await setQuery(page, `{ portCall(id: "${realId}") { id voyageReference } }`);
    expect(JSON.parse(await run(page, '"portCall"')).data).toEqual({ portCall: null });
    await setQuery(page, `mutation { deletePortCall(id: "${realId}") }`);
    expect(JSON.parse(await run(page, 'NOT_FOUND')).errors[0].extensions.code).toBe('NOT_FOUND');
    const viaRest = await page.evaluate(
      async ([id, secret]) =>
        (await fetch(`/v1/port-calls/${id}`, { headers: { 'X-API-Key': secret! } })).status,
      [realId, key],
    );
    expect(viaRest).toBe(404);
    const stillThere = await gql(server.url, `{ portCall(id: "${realId}") { id } }`, {
      key: server.key('ANALYST'),
    });
    expect(stillThere.body.data).toEqual({ portCall: { id: realId } });

    expect(offMachine).toEqual([]);
    expect(problems).toEqual([]);
    expect(failed).toEqual([`404 /v1/port-calls/${realId}`]);
  });

  it('the landing page links the playground, the documentation and the console, all served from here', async () => {
    const page = await newPage();
    await page.goto(`${server.url}/`);
    await page.click('#link-playground');
    await page.waitForSelector('.graphiql-container');
    await page.goto(`${server.url}/`);
    await page.click('#link-readme');
    await page.waitForSelector('#readme');
    expect(await page.textContent('#readme')).toContain('Playground and sandbox keys');
    expect(offMachine).toEqual([]);
    expect(problems).toEqual([]);
    expect(failed).toEqual([]);
  });
});
