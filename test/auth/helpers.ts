import { createHash, randomBytes } from 'node:crypto';
import { createConnection, createServer, type AddressInfo, type Socket } from 'node:net';
import { createUser } from '../../src/accounts/service.js';
import { authCommands } from '../../src/auth/cli.js';
import { AccessTokenRecord, AuthorizationCode, RefreshToken } from '../../src/auth/entities.js';
import type { ManualClock } from '../../src/kernel/clock.js';
import { startTestServer, type Json, type TestServer, type TestServerOptions } from '../helpers/server.js';

/**
 * The issuer must equal the URL clients discover it at, so the port is chosen before start
 * (PUBLIC_URL is read once from config).
 */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      probe.close(() => resolve(port));
    });
  });
}

export async function startAuthServer(options: TestServerOptions = {}): Promise<TestServer> {
  // Another test file can take the port between `freePort` and the listen: try a new one then.
  for (let attempt = 1; ; attempt++) {
    const port = await freePort();
    try {
      return await startTestServer({
        ...options,
        env: { PORT: String(port), PUBLIC_URL: `http://127.0.0.1:${port}`, ...options.env },
      });
    } catch (e) {
      if (attempt >= 3 || !String(e).includes('EADDRINUSE')) throw e;
    }
  }
}

export const PASSWORD = 'correct horse battery staple';

/** A non-admin user in the demo Analyst account. */
export async function createAnalystUser(
  server: TestServer,
  clock: { now(): Date },
  email = 'ana@example.com',
) {
  const accountId = server.demo.accounts.find((a) => a.plan === 'ANALYST')!.accountId;
  const user = await createUser(
    { em: server.database.db.em(), clock: clock as ManualClock },
    {
      accountId,
      email,
      password: PASSWORD,
      name: 'Ana Lyst',
    },
  );
  return { id: user.id, email, accountId };
}

export const command = (name: string) => authCommands.find((c) => c.name === name)!;

export interface ClientOptions {
  accountId: string;
  redirectUris?: string[];
  scopes?: string;
  grantTypes?: string;
  public?: boolean;
  name?: string;
}

/** Registers a client through the CLI command (the operator path). */
export async function registerClient(server: TestServer, clock: { now(): Date }, options: ClientOptions) {
  const { json } = await command('clients create').run(
    { config: server.config, db: server.database.db, clock },
    {
      options: {
        account: options.accountId,
        name: options.name ?? 'Test app',
        'redirect-uri': options.redirectUris ?? ['http://127.0.0.1:9/callback'],
        scopes: options.scopes ?? 'read:vessels read:port_calls',
        'grant-types': options.grantTypes,
        public: options.public ?? false,
      },
      positionals: [],
    },
  );
  return json as { client_id: string; client_secret: string | null; redirect_uris: string[] };
}

export function pkce(): { verifier: string; challenge: string } {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
}

/** A tiny cookie jar: the console and consent pages are driven over plain fetch. */
export class Browser {
  private readonly cookies = new Map<string, string>();

  /** `headers` go with every request (e.g. X-Forwarded-For to pose as another source IP). */
  constructor(
    readonly base: string,
    private readonly headers: Record<string, string> = {},
  ) {}

  async fetch(path: string, init: RequestInit = {}): Promise<Response> {
    const headers = new Headers({ ...this.headers, ...Object.fromEntries(new Headers(init.headers)) });
    if (this.cookies.size > 0)
      headers.set('cookie', [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; '));
    const res = await fetch(path.startsWith('http') ? path : `${this.base}${path}`, {
      ...init,
      headers,
      redirect: 'manual',
    });
    for (const line of res.headers.getSetCookie()) {
      const [pair] = line.split(';');
      const eq = pair!.indexOf('=');
      const name = pair!.slice(0, eq);
      const value = pair!.slice(eq + 1);
      if (value === '' || /max-age=0|expires=thu, 01 jan 1970/i.test(line)) this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
    return res;
  }

  post(path: string, form: Record<string, string | string[]>): Promise<Response> {
    const body = new URLSearchParams();
    for (const [k, v] of Object.entries(form))
      for (const item of Array.isArray(v) ? v : [v]) body.append(k, item);
    return this.fetch(path, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body,
    });
  }

  cookie(name: string): string | undefined {
    return this.cookies.get(name);
  }

  /** Signs in through the login form; returns the final response (303 on success). */
  async login(email: string, password: string, returnTo = '/console'): Promise<Response> {
    const page = await this.fetch(`/console/login?return_to=${encodeURIComponent(returnTo)}`);
    const csrf = hiddenValue(await page.text(), 'csrf');
    return this.post('/console/login', { csrf, email, password, return_to: returnTo });
  }
}

export function hiddenValue(html: string, name: string): string {
  const match = new RegExp(`name="${name}" value="([^"]*)"`).exec(html);
  if (!match) throw new Error(`no hidden field ${name} in page`);
  return match[1]!
    .replace(/&amp;/g, '&')
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>');
}

export interface AuthorizeParams {
  client_id: string;
  redirect_uri: string;
  scope?: string;
  state?: string;
  code_challenge?: string;
  code_challenge_method?: string;
  response_type?: string;
}

export function authorizeUrl(params: AuthorizeParams | Record<string, string>): string {
  const query = new URLSearchParams({ response_type: 'code', code_challenge_method: 'S256', ...params });
  return `/oauth/authorize?${query}`;
}

/**
 * Runs the browser part of the flow over HTTP: authorize → (login) → consent → decision.
 * Returns the redirect the decision produced.
 */
export async function consent(
  browser: Browser,
  params: AuthorizeParams,
  decision: 'approve' | 'deny' = 'approve',
): Promise<URL> {
  const page = await browser.fetch(authorizeUrl(params));
  if (page.status !== 200)
    throw new Error(`consent page answered ${page.status} ${page.headers.get('location') ?? ''}`);
  const html = await page.text();
  const form: Record<string, string> = { decision, csrf: hiddenValue(html, 'csrf') };
  for (const name of [
    'client_id',
    'redirect_uri',
    'response_type',
    'scope',
    'state',
    'code_challenge',
    'code_challenge_method',
  ]) {
    try {
      form[name] = hiddenValue(html, name);
    } catch {
      // optional parameter not present
    }
  }
  const res = await browser.post('/oauth/authorize', form);
  if (res.status !== 303) throw new Error(`decision answered ${res.status}: ${await res.text()}`);
  return new URL(res.headers.get('location')!);
}

/** Signs in and approves; returns the code and the PKCE verifier. */
export async function obtainCode(
  server: TestServer,
  user: { email: string },
  client: { client_id: string },
  options: { scope?: string; redirectUri?: string; browser?: Browser } = {},
) {
  const browser = options.browser ?? new Browser(server.url);
  if (!options.browser) await browser.login(user.email, PASSWORD);
  const { verifier, challenge } = pkce();
  const redirectUri = options.redirectUri ?? 'http://127.0.0.1:9/callback';
  const location = await consent(browser, {
    client_id: client.client_id,
    redirect_uri: redirectUri,
    scope: options.scope ?? 'read:vessels',
    state: 'xyz',
    code_challenge: challenge,
  });
  const code = location.searchParams.get('code');
  if (!code) throw new Error(`no code in ${location}`);
  return { code, verifier, redirectUri, browser };
}

/** POST /oauth/token with a form (client_secret_post unless `basic` is given). */
export async function tokenRequest(
  server: TestServer,
  form: Record<string, string>,
  basic?: { id: string; secret: string },
  extraHeaders: Record<string, string> = {},
): Promise<{ status: number; headers: Headers; body: Record<string, unknown> }> {
  const headers: Record<string, string> = {
    'content-type': 'application/x-www-form-urlencoded',
    ...extraHeaders,
  };
  if (basic)
    headers.authorization = `Basic ${Buffer.from(`${encodeURIComponent(basic.id)}:${encodeURIComponent(basic.secret)}`).toString('base64')}`;
  const res = await fetch(`${server.url}/oauth/token`, {
    method: 'POST',
    headers,
    body: new URLSearchParams(form),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : {} };
}

export async function postForm(
  server: TestServer,
  path: string,
  form: Record<string, string>,
  extraHeaders: Record<string, string> = {},
) {
  const res = await fetch(`${server.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...extraHeaders },
    body: new URLSearchParams(form),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, text, body: text ? JSON.parse(text) : {} };
}

/** Row counts of everything the token endpoint writes: an error must leave them unchanged. */
export async function tokenRows(server: TestServer) {
  const em = server.database.db.em();
  return {
    codes: await em.count(AuthorizationCode, {}),
    usedCodes: await em.count(AuthorizationCode, { usedAt: { $ne: null } }),
    refresh: await em.count(RefreshToken, {}),
    usedRefresh: await em.count(RefreshToken, { usedAt: { $ne: null } }),
    revokedRefresh: await em.count(RefreshToken, { revokedAt: { $ne: null } }),
    access: await em.count(AccessTokenRecord, {}),
    revokedAccess: await em.count(AccessTokenRecord, { revokedAt: { $ne: null } }),
  };
}

/** Code → tokens with client_secret_post; throws unless the exchange succeeds. */
export async function exchangeCode(
  server: TestServer,
  user: { email: string },
  client: { client_id: string; client_secret: string | null },
  options: { scope?: string; browser?: Browser } = {},
): Promise<{ access_token: string; refresh_token: string; scope: string }> {
  const { code, verifier, redirectUri } = await obtainCode(server, user, client, options);
  const res = await tokenRequest(server, {
    grant_type: 'authorization_code',
    code,
    code_verifier: verifier,
    redirect_uri: redirectUri,
    client_id: client.client_id,
    ...(client.client_secret ? { client_secret: client.client_secret } : {}),
  });
  if (res.status !== 200) throw new Error(`token exchange failed: ${JSON.stringify(res.body)}`);
  return res.body as never;
}

export async function vesselStatus(server: TestServer, token: string): Promise<number> {
  const res = await fetch(`${server.url}/v1/vessels/lookup?imo=9074729`, {
    headers: { authorization: `Bearer ${token}` },
  });
  await res.text();
  return res.status;
}

export async function getJson(url: string): Promise<Json> {
  return (await fetch(url)).json();
}

/** Poses as a client at `ip` (the server must run with TRUST_PROXY=true). */
export const fromIp = (ip: string): Record<string, string> => ({ 'x-forwarded-for': ip });

/**
 * A TCP proxy in front of Redis that can go silent: bytes dropped both ways, sockets left open
 * (a half-open connection, noticed only by never getting a reply). With `only`, silence applies to
 * the connections that have sent a chunk matching it (e.g. the auth throttle's keys), so the
 * server's other Redis clients keep working. Copied from test/gateway/pipeline/limits.test.ts.
 */
export async function silenceableRedisProxy(target: URL, only: (chunk: string) => boolean = () => true) {
  let silent = false;
  const sockets = new Set<Socket>();
  const clients = new Set<Socket>();
  let accepted = 0;
  const server = createServer((client) => {
    accepted += 1;
    const upstream = createConnection(Number(target.port || 6379), target.hostname);
    let matched = false;
    clients.add(client);
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('error', () => socket.destroy());
      socket.on('close', () => sockets.delete(socket));
    }
    client.on('close', () => {
      clients.delete(client);
      upstream.destroy();
    });
    upstream.on('close', () => client.destroy());
    const dropped = () => silent && matched;
    client.on('data', (chunk: Buffer) => {
      if (only(chunk.toString('latin1'))) matched = true;
      if (!dropped()) upstream.write(chunk);
    });
    upstream.on('data', (chunk: Buffer) => dropped() || client.write(chunk));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `redis://127.0.0.1:${(server.address() as AddressInfo).port}`,
    silence: () => (silent = true),
    /** Client connections still open through the proxy. */
    openConnections: () => clients.size,
    /** Client connections accepted so far. */
    accepted: () => accepted,
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
