import { readdirSync, readFileSync } from 'node:fs';
import { extname, join, relative, sep } from 'node:path';
import cookie from '@fastify/cookie';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import Negotiator from 'negotiator';
import { html, PAGE_HEADERS, sendPage, type SafeHtml } from '../auth/html.js';
import { currentSession, sessionCsrfValid } from '../auth/sessions.js';
import type { AppServices } from '../gateway/schema/context.js';
import { routeOf } from '../gateway/doors/fastify-types.js';
import { AppError } from '../kernel/errors.js';
import { PACKAGE_ROOT, PLAYGROUND_DIR, readManifest, type Manifest } from '../kernel/browser-bundle.js';
import { createSandboxKey } from './sandbox.js';

/** Where a signed-out visitor signs in and comes back to the playground. */
const SIGN_IN_URL = `/console/login?return_to=${encodeURIComponent('/playground')}`;

/**
 * GraphiQL styles elements from script (allowed) and some of its widgets insert <style> tags
 * (hence 'unsafe-inline' for styles only); scripts, fonts, images and calls stay on this origin.
 */
const PLAYGROUND_CSP =
  "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; object-src 'none'";

const CONTENT_TYPES: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.woff': 'font/woff',
  '.woff2': 'font/woff2',
  '.ttf': 'font/ttf',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
};

/** GraphQL answers first: only a client that prefers HTML over JSON (a browser) gets the IDE. */
const GRAPHQL_GET_TYPES = ['application/graphql-response+json', 'application/json', 'text/html'];

function prefersHtml(request: FastifyRequest): boolean {
  return (
    new Negotiator({ headers: { accept: request.headers.accept } }).mediaType(GRAPHQL_GET_TYPES) ===
    'text/html'
  );
}

/** The built bundle, read once it exists (a build after start is picked up; files are immutable). */
class PlaygroundBundle {
  private manifest: Manifest | null = null;
  private readonly files = new Map<string, Buffer>();

  constructor(private readonly dir: string) {}

  current(): Manifest | null {
    this.manifest ??= readManifest(this.dir);
    return this.manifest;
  }

  /** A file of the bundle, its gzip copy when asked for and built; null for any other name. */
  file(name: string, gzip: boolean): Buffer | null {
    const manifest = this.current();
    if (!manifest?.files.includes(name)) return null;
    const stored = gzip && manifest.gzipped.includes(name) ? `${name}.gz` : name;
    let body = this.files.get(stored);
    if (!body) {
      body = readFileSync(join(this.dir, stored));
      this.files.set(stored, body);
    }
    return body;
  }

  hasGzip(name: string): boolean {
    return this.current()?.gzipped.includes(name) ?? false;
  }
}

function playgroundPage(reply: FastifyReply, bundle: PlaygroundBundle): FastifyReply {
  const manifest = bundle.current();
  if (!manifest) {
    return sendPage(
      reply,
      503,
      'Playground not built',
      html`<section class="card error-page">
        <h1>The playground is not built</h1>
        <p class="error">Run <code>npm run build:playground</code> (npm install does it) and reload.</p>
      </section>`,
    );
  }
  const page: SafeHtml = html`<!doctype html>
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <title>Playground · tidegate</title>
        <link rel="stylesheet" href="/playground/assets/${manifest.style}" />
        <script src="/playground/assets/${manifest.script}" defer></script>
      </head>
      <body>
        <div id="playground"><noscript>The playground needs JavaScript.</noscript></div>
      </body>
    </html>`;
  return (
    reply
      .code(200)
      .headers(PAGE_HEADERS)
      .header('content-security-policy', PLAYGROUND_CSP)
      // The page names the current bundle's hashed files: revalidate it, cache those forever.
      .header('cache-control', 'no-cache')
      .header('vary', 'Accept')
      .type('text/html; charset=utf-8')
      .send(page.value)
  );
}

/** One markdown file of the documentation: the README, or a reference page beside the code. */
interface Doc {
  /** Its path from the package root, with `/`: also its address under /readme/. */
  readonly path: string;
  /** Its first heading. */
  readonly title: string;
  readonly text: string;
}

/**
 * The reference pages: every markdown file under src/ and test/ (each folder documents itself
 * beside its code), read once at start, so a page added there is served and listed with no list
 * to keep up to date.
 */
function referenceDocs(root: string): Doc[] {
  const docs: Doc[] = [];
  const walk = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true }).sort((a, b) =>
      a.name.localeCompare(b.name),
    )) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) {
        if (entry.name !== 'node_modules' && entry.name !== 'generated') walk(path);
      } else if (entry.name.endsWith('.md')) {
        const text = readFileSync(path, 'utf8');
        const title = /^# (.+)$/m.exec(text)?.[1] ?? entry.name;
        docs.push({ path: relative(root, path).split(sep).join('/'), title, text });
      }
    }
  };
  for (const dir of ['src', 'test']) walk(join(root, dir));
  return docs;
}

function docLinks(docs: readonly Doc[]): SafeHtml {
  return html`<ul class="doc-links">
    ${docs.map((doc) => html`<li><a href="/readme/${doc.path}">${doc.title}</a> <code>${doc.path}</code></li>`)}
  </ul>`;
}

function landingPage(reply: FastifyReply, docs: readonly Doc[]): FastifyReply {
  return sendPage(
    reply,
    200,
    'Welcome',
    html`<section class="card" id="landing">
      <h1>tidegate</h1>
      <p>
        A GraphQL gateway over maritime port operations and liquidity scoring of tokenized real-world assets,
        with an OAuth 2.0 authorization server, REST routes under <code>/v1</code> and live feeds.
      </p>
      <ul>
        <li>
          <a href="/playground" id="link-playground">Playground</a>: explore the schema, run queries; sign in
          to generate a sandbox key in one click.
        </li>
        <li>
          <a href="/readme" id="link-readme">Documentation</a>: the README (set-up, configuration, API,
          operations), and the reference beside the code: ${docLinks(docs)}
        </li>
        <li><a href="/console" id="link-console">Console</a>: your API keys and OAuth applications.</li>
      </ul>
      <p class="muted">
        GraphQL endpoint: <code>POST /graphql</code>; WebSocket subscriptions on the same path.
      </p>
    </section>`,
  );
}

/**
 * A page of the documentation as text: enough to read it offline next to the playground. Every
 * page lists the others, since the README links them by path.
 */
function docPage(reply: FastifyReply, doc: Doc, docs: readonly Doc[]): FastifyReply {
  return sendPage(
    reply,
    200,
    doc.title,
    html`<section class="card readme">
      <nav id="docs">
        <a href="/readme">README</a>
        ${docLinks(docs)}
      </nav>
      <pre id="readme">${doc.text}</pre>
    </section>`,
  );
}

/**
 * The self-hosted playground: the landing page (/), the IDE (/playground, and GET /graphql for
 * browsers), its assets, the documentation (/readme), and the sandbox-key endpoint it calls. Registered from
 * app.ts after the edge, so the GET /graphql hook runs after credentials are resolved.
 */
export async function registerPlayground(
  app: FastifyInstance,
  services: AppServices,
  bundleDir = PLAYGROUND_DIR,
): Promise<void> {
  const bundle = new PlaygroundBundle(bundleDir);
  // A root hook (not inside the child context below), because /graphql belongs to the gateway.
  app.addHook('onRequest', (request, reply, done) => {
    if (request.method !== 'GET' || routeOf(request).url !== '/graphql' || !prefersHtml(request))
      return done();
    playgroundPage(reply, bundle);
  });

  const text = readFileSync(join(PACKAGE_ROOT, 'README.md'), 'utf8');
  const readme: Doc = { path: 'README.md', title: 'Documentation', text };
  const docs = referenceDocs(PACKAGE_ROOT);
  const byPath = new Map(docs.map((doc) => [doc.path, doc]));
  await app.register(async (scope) => {
    await scope.register(cookie);
    scope.get('/', async (_request, reply) => landingPage(reply, docs));
    scope.get('/readme', async (_request, reply) => docPage(reply, readme, docs));
    scope.get('/readme/*', async (request, reply) => {
      const path = (request.params as { '*': string })['*'];
      const doc = byPath.get(path);
      if (!doc) throw new AppError('NOT_FOUND', `No documentation page '${path}'`);
      return docPage(reply, doc, docs);
    });
    scope.get('/playground', async (_request, reply) => playgroundPage(reply, bundle));
    scope.get('/playground/assets/:name', async (request, reply) => {
      const name = (request.params as { name: string }).name;
      const gzip =
        bundle.hasGzip(name) &&
        new Negotiator({ headers: { 'accept-encoding': request.headers['accept-encoding'] } }).encoding([
          'gzip',
          'identity',
        ]) === 'gzip';
      const body = bundle.file(name, gzip);
      if (!body) throw new AppError('NOT_FOUND', `No playground asset '${name}'`);
      if (gzip) reply.header('content-encoding', 'gzip');
      return reply
        .type(CONTENT_TYPES[extname(name)] ?? 'application/octet-stream')
        .header('cache-control', 'public, max-age=31536000, immutable')
        .header('vary', 'Accept-Encoding')
        .header('x-content-type-options', 'nosniff')
        .send(body);
    });
    scope.get('/playground/session', async (request, reply) => {
      reply.header('cache-control', 'no-store');
      const signedIn = await currentSession({ em: services.db.em(), clock: services.clock }, request);
      if (!signedIn) return { signedIn: false, signInUrl: SIGN_IN_URL };
      return {
        signedIn: true,
        email: signedIn.user.email,
        accountName: signedIn.user.account.name,
        // The page sends it back in X-CSRF-Token: another site can neither read it nor set the header.
        csrfToken: signedIn.session.csrfToken,
      };
    });
    scope.post('/playground/sandbox-keys', async (request, reply) => {
      reply.header('cache-control', 'no-store');
      const em = services.db.em();
      const signedIn = await currentSession({ em, clock: services.clock }, request);
      if (!signedIn)
        throw new AppError(
          'UNAUTHENTICATED',
          `Sign in to generate a sandbox key: ${services.config.publicUrl}${SIGN_IN_URL}`,
        );
      if (!sessionCsrfValid(signedIn, request.headers['x-csrf-token']))
        throw new AppError('FORBIDDEN', 'X-CSRF-Token is missing or does not match the session', {
          field: 'X-CSRF-Token',
        });
      const { secret, key, sandbox } = await createSandboxKey(
        { em, clock: services.clock },
        services.config,
        signedIn.user.account,
        signedIn.user.email,
      );
      return reply.code(201).send({
        key: secret,
        header: 'X-API-Key',
        keyId: key.id,
        sandboxAccountId: sandbox.id,
        expiresAt: key.expiresAt!.toISOString(),
        scopes: key.scopes,
        rateLimitPerMinute: services.config.sandboxPerMinute,
      });
    });
  });
}
