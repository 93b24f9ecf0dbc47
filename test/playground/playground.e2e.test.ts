import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Fastify from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensurePlaygroundBuilt } from '../../src/playground/build.js';
import { registerPlayground } from '../../src/playground/http.js';
import { escapeHtml } from '../../src/auth/html.js';
import { PACKAGE_ROOT } from '../../src/kernel/package-root.js';
import type { Manifest } from '../../src/kernel/browser-bundle.js';
import { gql, startTestServer, type Json, type TestServer } from '../helpers/server.js';

/** What Chromium sends when the address bar navigates to a URL. */
const BROWSER_ACCEPT =
  'text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,image/apng,*/*;q=0.8';

/** The reference the README links to, beside the code; /readme must list and serve each. */
const REFERENCE_PAGES = [
  'src/gateway/README.md',
  'src/db/README.md',
  'src/kernel/README.md',
  'src/auth/README.md',
  'src/events/README.md',
  'src/port-ops/README.md',
  'src/liquidity/README.md',
  'src/liquidity/METHODOLOGY.md',
  'src/client/README.md',
  'test/bench/README.md',
];

describe('playground pages and GET /graphql content negotiation', () => {
  let server: TestServer;
  let manifest: Manifest;

  beforeAll(async () => {
    manifest = await ensurePlaygroundBuilt();
    server = await startTestServer();
  });
  afterAll(() => server?.close());

  const get = (path: string, headers: Record<string, string> = {}) =>
    fetch(`${server.url}${path}`, { headers, redirect: 'manual' });

  async function expectPlaygroundPage(res: Response): Promise<void> {
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/html/);
    expect(res.headers.get('cache-control')).toBe('no-cache');
    const csp = res.headers.get('content-security-policy')!;
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("connect-src 'self'");
    const page = await res.text();
    expect(page).toContain(`<script src="/playground/assets/${manifest.script}" defer></script>`);
    expect(page).toContain(`href="/playground/assets/${manifest.style}"`);
    expect(page).toContain('<div id="playground">');
    // Self-hosted: the page loads nothing from another origin.
    expect(page).not.toMatch(/(src|href)="(https?:)?\/\//);
  }

  it('serves the IDE to a browser at GET /graphql (Accept prefers text/html), varying on Accept', async () => {
    const res = await get('/graphql', { accept: BROWSER_ACCEPT });
    expect(res.headers.get('vary')).toMatch(/accept/i);
    await expectPlaygroundPage(res);
  });

  it('serves the IDE at GET /playground whatever the Accept header', async () => {
    await expectPlaygroundPage(await get('/playground'));
    await expectPlaygroundPage(await get('/playground', { accept: 'application/json' }));
  });

  it('keeps answering GraphQL on GET /graphql when JSON is preferred, accepted as well, or Accept is absent', async () => {
    const query = `/graphql?query=${encodeURIComponent('{ __typename }')}`;
    for (const accept of [
      'application/json',
      'application/graphql-response+json',
      '*/*',
      'application/json, text/html;q=0.5',
      undefined,
    ]) {
      const res = await get(query, {
        'apollo-require-preflight': 'true',
        ...(accept ? { accept } : {}),
      });
      expect(res.status, `Accept: ${accept}`).toBe(200);
      expect(res.headers.get('content-type'), `Accept: ${accept}`).toMatch(/json/);
      expect(await res.json()).toMatchObject({ data: { __typename: 'Query' } });
    }
  });

  it('leaves POST /graphql alone, even from a client that prefers HTML', async () => {
    const { status, body } = await gql(server.url, '{ __typename }', { headers: { accept: BROWSER_ACCEPT } });
    expect(status).toBe(200);
    expect(body).toMatchObject({ data: { __typename: 'Query' } });
  });

  it('answers the introspection query GraphiQL sends (schema docs and autocomplete) without a credential', async () => {
    const { status, body } = await gql(server.url, '{ __schema { queryType { name } types { name } } }');
    expect(status).toBe(200);
    const schema = body.data!.__schema as { queryType: { name: string }; types: Array<{ name: string }> };
    expect(schema.queryType.name).toBe('Query');
    expect(schema.types.map((t) => t.name)).toContain('PortCall');
  });

  it('serves the bundle with immutable caching and a content type per file; unknown names are 404', async () => {
    const script = await get(`/playground/assets/${manifest.script}`);
    expect(script.status).toBe(200);
    expect(script.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect(script.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    expect(script.headers.get('x-content-type-options')).toBe('nosniff');
    expect((await script.text()).length).toBeGreaterThan(100_000);
    const style = await get(`/playground/assets/${manifest.style}`);
    expect(style.status).toBe(200);
    expect(style.headers.get('content-type')).toBe('text/css; charset=utf-8');
    expect(style.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');

    for (const name of ['manifest.json', 'nope.js', '..%2Fmanifest.json', '..%2F..%2Fpackage.json']) {
      const res = await get(`/playground/assets/${name}`);
      expect(res.status, name).toBe(404);
      expect(((await res.json()) as Json).error.code).toBe('NOT_FOUND');
    }
  });

  it('sends the gzip copy to clients that accept gzip, the same bytes once decompressed', async () => {
    const path = `/playground/assets/${manifest.script}`;
    const plain = await get(path, { 'accept-encoding': 'identity' });
    expect(plain.headers.get('content-encoding')).toBeNull();
    expect(plain.headers.get('vary')).toMatch(/accept-encoding/i);
    const bytes = Buffer.from(await plain.arrayBuffer());
    const zipped = await get(path, { 'accept-encoding': 'gzip, deflate, br' });
    expect(zipped.headers.get('content-encoding')).toBe('gzip');
    expect(zipped.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    expect(Number(zipped.headers.get('content-length'))).toBeLessThan(bytes.length / 2);
    // fetch decompresses: the script is the same.
    expect(Buffer.from(await zipped.arrayBuffer()).equals(bytes)).toBe(true);
  });

  it('serves a landing page at / that links the playground, the documentation and the console', async () => {
    const res = await get('/');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/html/);
    const page = await res.text();
    expect(page).toContain('href="/playground"');
    expect(page).toContain('href="/readme"');
    expect(page).toContain('href="/readme/src/gateway/README.md"');
    expect(page).toContain('href="/console"');
  });

  it('answers 503 with how to build it when the bundle is missing, and 404 for its assets', async () => {
    const empty = mkdtempSync(join(tmpdir(), 'tidegate-no-playground-'));
    const app = Fastify();
    try {
      await registerPlayground(app, server.app.services, empty);
      const page = await app.inject({ url: '/playground' });
      expect(page.statusCode).toBe(503);
      expect(page.body).toContain('npm run build:playground');
      expect((await app.inject({ url: `/playground/assets/${manifest.script}` })).statusCode).toBe(404);
      // The landing page does not need the bundle.
      expect((await app.inject({ url: '/' })).statusCode).toBe(200);
    } finally {
      await app.close();
      rmSync(empty, { recursive: true, force: true });
    }
  });

  it('serves the README, escaped, at /readme, with a link to every reference page beside the code', async () => {
    const res = await get('/readme');
    expect(res.status).toBe(200);
    const page = await res.text();
    expect(page).toContain('Playground and sandbox keys');
    expect(page).not.toMatch(/<pre id="readme">[^]*<script/);
    const linked = [...page.matchAll(/href="\/readme\/([^"]+)"/g)].map((m) => m[1]);
    for (const path of REFERENCE_PAGES) expect(linked).toContain(path);
  });

  it('serves each reference page, escaped, at /readme/<its path>', async () => {
    for (const path of REFERENCE_PAGES) {
      const res = await get(`/readme/${path}`);
      expect(res.status, path).toBe(200);
      const page = await res.text();
      const source = readFileSync(join(PACKAGE_ROOT, path), 'utf8');
      const heading = /^# (.+)$/m.exec(source)![1]!;
      expect(page, path).toContain(`<title>${escapeHtml(heading)} · tidegate</title>`);
      expect(page, path).toContain(escapeHtml(source.split('\n').slice(-2).join('\n')));
      expect(page, path).toContain('href="/readme"');
    }
  });

  it('answers 404 for any other path under /readme, files of the package included', async () => {
    for (const path of ['src/nope/README.md', 'package.json', 'src/config.ts', 'README.md']) {
      const res = await get(`/readme/${path}`);
      expect(res.status, path).toBe(404);
      expect(((await res.json()) as Json).error.code).toBe('NOT_FOUND');
    }
  });
});
