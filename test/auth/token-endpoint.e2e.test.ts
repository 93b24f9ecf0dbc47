import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp, type App } from '../../src/app.js';
import { describeEachDialect, describeWithRedis, TEST_REDIS_URL } from '../helpers/env.js';
import { HOUR, ManualClock, MINUTE, DAY, SECOND, systemClock } from '../../src/kernel/clock.js';
import type { TestServer } from '../helpers/server.js';
import {
  createAnalystUser,
  exchangeCode,
  obtainCode,
  registerClient,
  startAuthServer,
  tokenRequest,
  tokenRows,
  vesselStatus,
  fromIp,
} from './helpers.js';

describeEachDialect('POST /oauth/token', (dialect) => {
  const clock = new ManualClock('2026-03-02T10:00:00.000Z');
  let server: TestServer;
  let user: { id: string; email: string; accountId: string };
  let client: { client_id: string; client_secret: string | null };

  beforeAll(async () => {
    server = await startAuthServer({
      dialect,
      clock,
      env: { AUTH_CLIENT_MAX_FAILURES: '1000', AUTH_LOGIN_MAX_FAILURES: '1000' },
    });
    user = await createAnalystUser(server, clock);
    client = await registerClient(server, clock, {
      accountId: user.accountId,
      grantTypes: 'authorization_code refresh_token client_credentials',
    });
  });
  afterAll(() => server?.close());

  const secretPost = () => ({ client_id: client.client_id, client_secret: client.client_secret! });

  /** Runs `request`, expects an RFC 6749 error, and checks nothing was written. */
  async function expectError(
    request: () => ReturnType<typeof tokenRequest>,
    status: number,
    error: string,
    description?: RegExp,
  ) {
    const before = await tokenRows(server);
    const res = await request();
    expect(res.status).toBe(status);
    expect(res.body.error).toBe(error);
    expect(typeof res.body.error_description).toBe('string');
    if (description) expect(res.body.error_description).toMatch(description);
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(await tokenRows(server)).toEqual(before);
    return res;
  }

  it('answers exactly the seed token shape with Cache-Control: no-store, via client_secret_post and client_secret_basic', async () => {
    const { code, verifier, redirectUri } = await obtainCode(server, user, client, { scope: 'vessels:read' });
    const post = await tokenRequest(server, {
      grant_type: 'authorization_code',
      code,
      code_verifier: verifier,
      redirect_uri: redirectUri,
      ...secretPost(),
    });
    expect(post.status).toBe(200);
    expect(post.headers.get('cache-control')).toBe('no-store');
    expect(post.headers.get('pragma')).toBe('no-cache');
    expect(Object.keys(post.body).sort()).toEqual([
      'access_token',
      'expires_in',
      'refresh_token',
      'scope',
      'token_type',
    ]);
    expect(post.body).toMatchObject({ token_type: 'Bearer', expires_in: 3600, scope: 'read:vessels' });
    const [header, payload] = (post.body.access_token as string)
      .split('.')
      .slice(0, 2)
      .map((p) => JSON.parse(Buffer.from(p, 'base64url').toString()));
    expect(header).toMatchObject({ alg: 'ES256', typ: 'at+jwt' });
    expect(header.kid).toBeTruthy();
    expect(payload).toMatchObject({
      iss: server.config.publicUrl,
      sub: user.id,
      aud: server.config.publicUrl,
      client_id: client.client_id,
      scope: 'read:vessels',
    });
    expect(payload.exp - payload.iat).toBe(3600);
    expect(payload.jti).toBeTruthy();

    const second = await obtainCode(server, user, client);
    const basic = await tokenRequest(
      server,
      {
        grant_type: 'authorization_code',
        code: second.code,
        code_verifier: second.verifier,
        redirect_uri: second.redirectUri,
      },
      { id: client.client_id, secret: client.client_secret! },
    );
    expect(basic.status).toBe(200);
    expect(basic.body.token_type).toBe('Bearer');
  });

  it('invalid_request: missing or duplicated parameters, wrong content type, two authentication methods', async () => {
    await expectError(
      () => tokenRequest(server, { ...secretPost() }),
      400,
      'invalid_request',
      /grant_type is required/,
    );
    await expectError(
      () =>
        tokenRequest(server, {
          grant_type: 'authorization_code',
          redirect_uri: 'http://127.0.0.1:9/callback',
          code_verifier: 'a'.repeat(43),
          ...secretPost(),
        }),
      400,
      'invalid_request',
      /code is required/,
    );
    await expectError(
      () =>
        tokenRequest(server, {
          grant_type: 'authorization_code',
          code: 'x',
          redirect_uri: 'http://127.0.0.1:9/callback',
          ...secretPost(),
        }),
      400,
      'invalid_request',
      /code_verifier is required/,
    );
    await expectError(
      async () => {
        const res = await fetch(`${server.url}/oauth/token`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ grant_type: 'client_credentials', ...secretPost() }),
        });
        return {
          status: res.status,
          headers: res.headers,
          body: (await res.json()) as Record<string, unknown>,
        };
      },
      400,
      'invalid_request',
      /x-www-form-urlencoded/,
    );
    await expectError(
      async () => {
        const res = await fetch(`${server.url}/oauth/token`, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body: `grant_type=client_credentials&grant_type=client_credentials&client_id=${client.client_id}&client_secret=${client.client_secret}`,
        });
        return {
          status: res.status,
          headers: res.headers,
          body: (await res.json()) as Record<string, unknown>,
        };
      },
      400,
      'invalid_request',
      /more than once/,
    );
    await expectError(
      () =>
        tokenRequest(
          server,
          { grant_type: 'client_credentials', client_secret: client.client_secret! },
          { id: client.client_id, secret: client.client_secret! },
        ),
      400,
      'invalid_request',
      /one client authentication method/,
    );
  });

  it('invalid_client: 401 with WWW-Authenticate for a wrong secret, an unknown client or no credentials', async () => {
    for (const request of [
      () =>
        tokenRequest(server, {
          grant_type: 'client_credentials',
          client_id: client.client_id,
          client_secret: 'wrong',
        }),
      () =>
        tokenRequest(server, { grant_type: 'client_credentials' }, { id: client.client_id, secret: 'wrong' }),
      () =>
        tokenRequest(server, {
          grant_type: 'client_credentials',
          client_id: 'tgc_unknown',
          client_secret: 'x',
        }),
      () => tokenRequest(server, { grant_type: 'client_credentials', client_id: client.client_id }),
      () => tokenRequest(server, { grant_type: 'client_credentials' }),
    ]) {
      const res = await expectError(request, 401, 'invalid_client');
      expect(res.headers.get('www-authenticate')).toMatch(/^Basic realm="tidegate"/);
    }
  });

  it('unsupported_grant_type and unauthorized_client', async () => {
    await expectError(
      () => tokenRequest(server, { grant_type: 'password', ...secretPost() }),
      400,
      'unsupported_grant_type',
      /password/,
    );
    const codeOnly = await registerClient(server, clock, {
      accountId: user.accountId,
      grantTypes: 'authorization_code',
    });
    await expectError(
      () =>
        tokenRequest(server, {
          grant_type: 'client_credentials',
          client_id: codeOnly.client_id,
          client_secret: codeOnly.client_secret!,
        }),
      400,
      'unauthorized_client',
      /client_credentials/,
    );
    await expectError(
      () =>
        tokenRequest(server, {
          grant_type: 'refresh_token',
          refresh_token: 'tgr_x',
          client_id: codeOnly.client_id,
          client_secret: codeOnly.client_secret!,
        }),
      400,
      'unauthorized_client',
    );
  });

  it('client_credentials: defaults to the allowed scopes, narrower allowed, wider or unknown is invalid_scope', async () => {
    const all = await tokenRequest(server, { grant_type: 'client_credentials', ...secretPost() });
    expect(all.body).toMatchObject({ scope: 'read:port_calls read:vessels', expires_in: 3600 });
    expect(all.body.refresh_token).toBeUndefined();
    const narrow = await tokenRequest(server, {
      grant_type: 'client_credentials',
      scope: 'port-calls:read',
      ...secretPost(),
    });
    expect(narrow.body.scope).toBe('read:port_calls');
    await expectError(
      () =>
        tokenRequest(server, { grant_type: 'client_credentials', scope: 'read:invoices', ...secretPost() }),
      400,
      'invalid_scope',
      /read:invoices/,
    );
    await expectError(
      () =>
        tokenRequest(server, { grant_type: 'client_credentials', scope: 'read:everything', ...secretPost() }),
      400,
      'invalid_scope',
      /unknown scope/,
    );
  });

  it('invalid_grant: wrong code_verifier, redirect_uri mismatch, unknown code, another client’s code — the code stays unused', async () => {
    const { code, verifier, redirectUri } = await obtainCode(server, user, client);
    const base = {
      grant_type: 'authorization_code',
      code,
      code_verifier: verifier,
      redirect_uri: redirectUri,
      ...secretPost(),
    };
    await expectError(
      () => tokenRequest(server, { ...base, code_verifier: 'b'.repeat(43) }),
      400,
      'invalid_grant',
      /code_verifier/,
    );
    await expectError(
      () => tokenRequest(server, { ...base, redirect_uri: 'http://127.0.0.1:9/other' }),
      400,
      'invalid_grant',
      /redirect_uri/,
    );
    await expectError(() => tokenRequest(server, { ...base, code: 'not-a-code' }), 400, 'invalid_grant');
    const other = await registerClient(server, clock, { accountId: user.accountId });
    await expectError(
      () =>
        tokenRequest(server, { ...base, client_id: other.client_id, client_secret: other.client_secret! }),
      400,
      'invalid_grant',
    );
    expect((await tokenRequest(server, base)).status).toBe(200);
  });

  it('a code expires after 10 minutes: valid one second before, expired at 10 minutes', async () => {
    // Two codes issued at the same instant: one is spent just before expiry, the other just at it.
    const early = await obtainCode(server, user, client);
    const late = await obtainCode(server, user, client);
    const exchange = (c: typeof early) =>
      tokenRequest(server, {
        grant_type: 'authorization_code',
        code: c.code,
        code_verifier: c.verifier,
        redirect_uri: c.redirectUri,
        ...secretPost(),
      });
    clock.advance(10 * MINUTE - SECOND);
    expect((await exchange(early)).status).toBe(200);
    clock.advance(SECOND);
    await expectError(() => exchange(late), 400, 'invalid_grant', /expired/);
  });

  it('a second use of a code is invalid_grant and revokes every token issued from it, rotations included', async () => {
    const { code, verifier, redirectUri } = await obtainCode(server, user, client);
    const form = {
      grant_type: 'authorization_code',
      code,
      code_verifier: verifier,
      redirect_uri: redirectUri,
      ...secretPost(),
    };
    const first = await tokenRequest(server, form);
    expect(first.status).toBe(200);
    const rotated = await tokenRequest(server, {
      grant_type: 'refresh_token',
      refresh_token: first.body.refresh_token as string,
      ...secretPost(),
    });
    expect(rotated.status).toBe(200);
    expect(await vesselStatus(server, rotated.body.access_token as string)).toBe(200);

    const reuse = await tokenRequest(server, form);
    expect(reuse.status).toBe(400);
    expect(reuse.body).toMatchObject({ error: 'invalid_grant' });
    expect(reuse.body.error_description).toMatch(/already used.*revoked/);
    expect(await vesselStatus(server, first.body.access_token as string)).toBe(401);
    expect(await vesselStatus(server, rotated.body.access_token as string)).toBe(401);
    const refresh = await tokenRequest(server, {
      grant_type: 'refresh_token',
      refresh_token: rotated.body.refresh_token as string,
      ...secretPost(),
    });
    expect(refresh.body.error).toBe('invalid_grant');
  });

  it('refresh rotates on every use; reusing an old refresh token revokes the whole family', async () => {
    const first = await exchangeCode(server, user, client);
    const second = await tokenRequest(server, {
      grant_type: 'refresh_token',
      refresh_token: first.refresh_token,
      ...secretPost(),
    });
    expect(second.status).toBe(200);
    expect(second.body.refresh_token).not.toBe(first.refresh_token);
    const third = await tokenRequest(server, {
      grant_type: 'refresh_token',
      refresh_token: second.body.refresh_token as string,
      ...secretPost(),
    });
    expect(third.status).toBe(200);

    const reuse = await tokenRequest(server, {
      grant_type: 'refresh_token',
      refresh_token: first.refresh_token,
      ...secretPost(),
    });
    expect(reuse.body.error).toBe('invalid_grant');
    expect(reuse.body.error_description).toMatch(/family has been revoked/);
    expect(await vesselStatus(server, third.body.access_token as string)).toBe(401);
    const latest = await tokenRequest(server, {
      grant_type: 'refresh_token',
      refresh_token: third.body.refresh_token as string,
      ...secretPost(),
    });
    expect(latest.body).toMatchObject({
      error: 'invalid_grant',
      error_description: expect.stringMatching(/revoked/),
    });
  });

  it('refresh may narrow the scope but not widen it (invalid_scope); the family keeps its full grant', async () => {
    const first = await exchangeCode(server, user, client, { scope: 'read:vessels read:port_calls' });
    const narrow = await tokenRequest(server, {
      grant_type: 'refresh_token',
      refresh_token: first.refresh_token,
      scope: 'vessels:read',
      ...secretPost(),
    });
    expect(narrow.body.scope).toBe('read:vessels');
    await expectError(
      () =>
        tokenRequest(server, {
          grant_type: 'refresh_token',
          refresh_token: narrow.body.refresh_token as string,
          scope: 'read:vessels read:invoices',
          ...secretPost(),
        }),
      400,
      'invalid_scope',
      /read:invoices/,
    );
    const full = await tokenRequest(server, {
      grant_type: 'refresh_token',
      refresh_token: narrow.body.refresh_token as string,
      ...secretPost(),
    });
    expect(full.body.scope).toBe('read:port_calls read:vessels');
  });

  it('access tokens expire after 3600 s and refresh tokens after 30 days (moved clock)', async () => {
    // Two grants issued at the same instant: one refresh token is used just before expiry, one at it.
    const tokens = await exchangeCode(server, user, client);
    const twin = await exchangeCode(server, user, client);
    const refresh = (token: string) =>
      tokenRequest(server, { grant_type: 'refresh_token', refresh_token: token, ...secretPost() });
    expect(await vesselStatus(server, tokens.access_token)).toBe(200);
    clock.advance(HOUR - SECOND);
    expect(await vesselStatus(server, tokens.access_token)).toBe(200);
    clock.advance(SECOND);
    expect(await vesselStatus(server, tokens.access_token)).toBe(401);

    clock.advance(30 * DAY - HOUR - SECOND);
    expect((await refresh(twin.refresh_token)).status).toBe(200);
    clock.advance(SECOND);
    await expectError(() => refresh(tokens.refresh_token), 400, 'invalid_grant', /expired/);
  });

  it('a public client exchanges its code with PKCE and no secret; a secret from it is invalid_client', async () => {
    const pub = await registerClient(server, clock, { accountId: user.accountId, public: true });
    expect(pub.client_secret).toBeNull();
    const { code, verifier, redirectUri } = await obtainCode(server, user, pub);
    const form = {
      grant_type: 'authorization_code',
      code,
      code_verifier: verifier,
      redirect_uri: redirectUri,
      client_id: pub.client_id,
    };
    await expectError(
      () => tokenRequest(server, { ...form, client_secret: 'anything' }),
      401,
      'invalid_client',
    );
    const ok = await tokenRequest(server, form);
    expect(ok.status).toBe(200);
  });
});

describe('token endpoint throttling: per source IP and per (IP, client), never per client alone', () => {
  const clock = new ManualClock('2026-03-02T10:00:00.000Z');
  const ATTACKER = fromIp('198.51.100.7');
  const OWNER = fromIp('203.0.113.10');
  let server: TestServer;
  let user: { id: string; email: string; accountId: string };
  beforeAll(async () => {
    server = await startAuthServer({
      clock,
      env: {
        TRUST_PROXY: 'true',
        AUTH_CLIENT_MAX_FAILURES: '3',
        AUTH_CLIENT_MAX_FAILURES_PER_IP: '5',
        AUTH_THROTTLE_WINDOW: '1m',
      },
    });
    user = await createAnalystUser(server, clock);
  });
  afterAll(() => server?.close());

  const expectThrottled = (res: Awaited<ReturnType<typeof tokenRequest>>) => {
    expect(res.status).toBe(429);
    expect(res.body).toMatchObject({
      error: 'temporarily_unavailable',
      error_description: expect.stringMatching(/Too many failed client authentications from this address/),
    });
    expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(Number(res.headers.get('retry-after'))).toBeLessThanOrEqual(60);
  };

  it('an IP that keeps failing gets 429, even with the right secret; the owner elsewhere still gets tokens', async () => {
    const client = await registerClient(server, clock, {
      accountId: user.accountId,
      grantTypes: 'client_credentials',
    });
    const wrong = {
      grant_type: 'client_credentials',
      client_id: client.client_id,
      client_secret: 'wrong',
    };
    const right = { ...wrong, client_secret: client.client_secret! };
    for (let i = 0; i < 3; i++)
      expect((await tokenRequest(server, wrong, undefined, ATTACKER)).status).toBe(401);
    const before = await tokenRows(server);
    expectThrottled(await tokenRequest(server, right, undefined, ATTACKER));
    expectThrottled(
      await tokenRequest(
        server,
        { grant_type: 'client_credentials' },
        { id: client.client_id, secret: client.client_secret! },
        ATTACKER,
      ),
    );
    expect(await tokenRows(server)).toEqual(before);

    // The hammering did not touch the owner: from its own address the right secret works, repeatedly.
    for (let i = 0; i < 3; i++)
      expect((await tokenRequest(server, right, undefined, OWNER)).status).toBe(200);

    clock.advance(MINUTE);
    expect((await tokenRequest(server, right, undefined, ATTACKER)).status).toBe(200);
  });

  it('bogus secrets sent for a public client lock out only the sender: the app still exchanges its code', async () => {
    const pub = await registerClient(server, clock, { accountId: user.accountId, public: true });
    for (let i = 0; i < 3; i++) {
      const res = await tokenRequest(
        server,
        { grant_type: 'authorization_code', client_id: pub.client_id, client_secret: `bogus-${i}` },
        undefined,
        ATTACKER,
      );
      expect(res.status).toBe(401);
    }
    expectThrottled(
      await tokenRequest(
        server,
        { grant_type: 'authorization_code', client_id: pub.client_id },
        undefined,
        ATTACKER,
      ),
    );
    const { code, verifier, redirectUri } = await obtainCode(server, user, pub);
    const exchanged = await tokenRequest(
      server,
      {
        grant_type: 'authorization_code',
        code,
        code_verifier: verifier,
        redirect_uri: redirectUri,
        client_id: pub.client_id,
      },
      undefined,
      OWNER,
    );
    expect(exchanged.status).toBe(200);
    expect(exchanged.body.access_token).toBeTruthy();
  });

  it('an IP spraying many client_ids is stopped by the per-IP limit; other IPs are not', async () => {
    const client = await registerClient(server, clock, {
      accountId: user.accountId,
      grantTypes: 'client_credentials',
    });
    const sprayer = fromIp('198.51.100.99');
    for (let i = 0; i < 5; i++) {
      const res = await tokenRequest(
        server,
        { grant_type: 'client_credentials', client_id: `tgc_guess${i}`, client_secret: 'x' },
        undefined,
        sprayer,
      );
      expect(res.status).toBe(401);
    }
    const right = {
      grant_type: 'client_credentials',
      client_id: client.client_id,
      client_secret: client.client_secret!,
    };
    // This client_id never failed from anywhere; the sprayer is stopped by its address alone.
    expectThrottled(await tokenRequest(server, right, undefined, sprayer));
    expect((await tokenRequest(server, right, undefined, OWNER)).status).toBe(200);
  });
});

describeWithRedis('token endpoint throttling shared through Redis (REDIS_URL)', () => {
  let a: TestServer;
  let b: App;
  let bUrl: string;
  beforeAll(async () => {
    a = await startAuthServer({
      env: {
        TRUST_PROXY: 'true',
        REDIS_URL: TEST_REDIS_URL!,
        REDIS_PREFIX: `tidegate-test-${randomBytes(4).toString('hex')}`,
        AUTH_CLIENT_MAX_FAILURES: '3',
      },
    });
    // A second process on the same database and Redis.
    b = await buildApp({ ...a.config, port: 0 }, { db: a.database.db, logger: false });
    bUrl = await b.listen();
  });
  afterAll(async () => {
    await b?.close();
    await a?.close();
  });

  it('failures counted by one process throttle that IP on another; other IPs are untouched', async () => {
    const client = await registerClient(a, systemClock, {
      accountId: a.demo.accounts[0]!.accountId,
      grantTypes: 'client_credentials',
    });
    const attacker = fromIp('198.51.100.7');
    for (let i = 0; i < 3; i++) {
      const res = await tokenRequest(
        a,
        { grant_type: 'client_credentials', client_id: client.client_id, client_secret: 'wrong' },
        undefined,
        attacker,
      );
      expect(res.status).toBe(401);
    }
    const right = {
      grant_type: 'client_credentials',
      client_id: client.client_id,
      client_secret: client.client_secret!,
    };
    const onB = (headers: Record<string, string>) =>
      tokenRequest({ ...a, url: bUrl }, right, undefined, headers);
    const blocked = await onB(attacker);
    expect(blocked.status).toBe(429);
    expect(blocked.body.error).toBe('temporarily_unavailable');
    expect(Number(blocked.headers.get('retry-after'))).toBeGreaterThan(0);
    expect((await onB(fromIp('203.0.113.10'))).status).toBe(200);
  });
});
