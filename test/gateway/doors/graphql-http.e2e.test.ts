import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeEachDialect } from '../../helpers/env.js';
import { createKey, gql, startTestServer, type Json, type TestServer } from '../../helpers/server.js';

const VESSEL = '{ vessel(imo: "9074729") { imo name flag } }';

describeEachDialect('/graphql over HTTP', (dialect) => {
  let server: TestServer;
  const statements: string[] = [];
  beforeAll(async () => {
    server = await startTestServer({ dialect, onQuery: (sql) => statements.push(sql) });
  });
  afterAll(() => server?.close());

  it('answers POST application/json with the media type the client prefers', async () => {
    const json = await fetch(`${server.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': server.key('ANALYST') },
      body: JSON.stringify({ query: VESSEL }),
    });
    expect(json.status).toBe(200);
    expect(json.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(await json.json()).toMatchObject({
      data: { vessel: { imo: '9074729', name: 'Northern Tern', flag: 'SG' } },
      extensions: { cost: { requested: expect.any(Number) } },
    });

    const res = await gql(server.url, VESSEL, {
      key: server.key('ANALYST'),
      headers: { accept: 'application/graphql-response+json' },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/graphql-response+json; charset=utf-8');
  });

  it('a persisted-query hash that does not match its query is the caller’s 400, not an internal error', async () => {
    const res = await fetch(`${server.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': server.key('ANALYST') },
      body: JSON.stringify({
        query: VESSEL,
        extensions: { persistedQuery: { version: 1, sha256Hash: '0'.repeat(64) } },
      }),
    });
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({
      errors: [{ message: 'provided sha does not match query', extensions: { code: 'BAD_REQUEST' } }],
    });
  });

  it('serves a repeated operation exactly like the first time', async () => {
    const answers: Array<Awaited<ReturnType<typeof gql>>> = [];
    for (let i = 0; i < 4; i++) answers.push(await gql(server.url, VESSEL, { key: server.key('ANALYST') }));
    // The remaining budget moves with each call; everything else is the same answer.
    const sameness = (body: Record<string, unknown>) => ({ ...body, extensions: undefined });
    for (const a of answers) {
      expect(a.status).toBe(200);
      expect(sameness(a.body)).toEqual(sameness(answers[0]!.body));
      expect(a.headers.get('content-type')).toBe(answers[0]!.headers.get('content-type'));
    }
    const denied = [];
    for (let i = 0; i < 3; i++) denied.push(await gql(server.url, VESSEL));
    for (const d of denied) expect(d.status).toBe(401);
  });

  it('serves queries over GET when the request cannot be a cross-site one', async () => {
    const url = `${server.url}/graphql?query=${encodeURIComponent(VESSEL)}`;
    const ok = await fetch(url, {
      headers: { 'x-api-key': server.key('ANALYST'), 'apollo-require-preflight': 'true' },
    });
    expect(ok.status).toBe(200);
    expect(((await ok.json()) as Json).data.vessel.name).toBe('Northern Tern');
    // A GET that carries cookies and no preflight-forcing header is refused (CSRF prevention).
    const csrf = await fetch(url, {
      headers: { 'x-api-key': server.key('ANALYST'), cookie: 'tg_session=x' },
    });
    expect(csrf.status).toBe(400);
    expect(await csrf.text()).toMatch(/Cross-Site Request Forgery.*carries cookies/);
    const preflighted = await fetch(url, {
      headers: {
        'x-api-key': server.key('ANALYST'),
        cookie: 'tg_session=x',
        'apollo-require-preflight': '1',
      },
    });
    expect(preflighted.status).toBe(200);
  });

  it("serves urql 6's default GET query, which carries no cookie and no preflight header", async () => {
    // What @urql/core 6 sends for a query with preferGetMethod 'within-url-limit' (its default): the
    // document and variables in the URL, this Accept, no Content-Type; the credential from fetchOptions.
    const params = new URLSearchParams({ query: VESSEL, variables: '{}' });
    const res = await fetch(`${server.url}/graphql?${params}`, {
      method: 'GET',
      headers: {
        accept:
          'application/graphql-response+json, application/graphql+json, application/json, text/event-stream, multipart/mixed',
        authorization: `Bearer ${server.key('ANALYST')}`,
      },
    });
    expect(res.status).toBe(200);
    expect(((await res.json()) as Json).data.vessel.name).toBe('Northern Tern');
  });

  it('answers 401 with a WWW-Authenticate challenge when no credential was presented (RFC 9110 §11.6.1)', async () => {
    const post = await gql(server.url, VESSEL);
    expect(post.status).toBe(401);
    expect(post.headers.get('www-authenticate')).toBe('Bearer realm="tidegate"');
    const get = await fetch(`${server.url}/graphql?query=${encodeURIComponent(VESSEL)}`);
    expect(get.status).toBe(401);
    expect(get.headers.get('www-authenticate')).toBe('Bearer realm="tidegate"');
  });

  it('refuses mutations over GET with 405', async () => {
    const res = await fetch(`${server.url}/graphql?query=${encodeURIComponent('mutation { __typename }')}`, {
      headers: { 'x-api-key': server.key('ANALYST'), 'apollo-require-preflight': 'true' },
    });
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('POST');
  });

  it('answers other methods with 405 and an Allow header', async () => {
    const res = await fetch(`${server.url}/graphql`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: '{}',
    });
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('GET, POST');
  });

  it('refuses POST bodies that are not application/json with 415', async () => {
    for (const type of [
      'text/plain',
      'application/x-www-form-urlencoded',
      'multipart/form-data; boundary=x',
    ]) {
      const res = await fetch(`${server.url}/graphql`, {
        method: 'POST',
        headers: { 'content-type': type, 'x-api-key': server.key('ANALYST') },
        body: 'query=x',
      });
      expect(res.status).toBe(415);
      const body: Json = await res.json();
      expect(body.errors[0].extensions.code).toBe('UNSUPPORTED_MEDIA_TYPE');
    }
  });

  it('answers malformed requests with 400 and a GraphQL error body', async () => {
    const bad = async (body: string) => {
      const res = await fetch(`${server.url}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-api-key': server.key('ANALYST') },
        body,
      });
      return { status: res.status, body: (await res.json()) as Json };
    };
    const notJson = await bad('{"query": ');
    expect(notJson.status).toBe(400);
    expect(notJson.body.errors[0].extensions.code).toBe('BAD_USER_INPUT');
    expect(notJson.body.errors[0].message).toMatch(/^The body is not valid JSON/);
    // An empty body is no body (bodiless REST calls carry the JSON Content-Type); a GraphQL POST needs one.
    const empty = await bad('');
    expect(empty.status).toBe(400);
    expect(empty.body.errors[0].message).toMatch(/POST body missing/);
    // Prototype-poisoning keys are refused, spelled out or hidden behind \u escapes.
    for (const poisoned of [
      '{"query":"{ viewer { plan } }","variables":{"__proto__":{"admin":true}}}',
      '{"query":"{ viewer { plan } }","variables":{"\\u005f_proto__":{"admin":true}}}',
      '{"query":"{ viewer { plan } }","variables":{"constructor":{"prototype":{"admin":true}}}}',
    ]) {
      const refused = await bad(poisoned);
      expect(refused.status, poisoned).toBe(400);
      expect(refused.body.errors[0].message).toBe(
        'body: must not hold a "__proto__" or "constructor.prototype" key',
      );
    }
    // A body that merely mentions the words in a value is fine.
    expect(
      (await bad(JSON.stringify({ query: '{ viewer { plan } }', variables: { note: '__proto__' } }))).status,
    ).toBe(200);
    expect((await bad('{}')).status).toBe(400);
    const syntax = await bad(JSON.stringify({ query: '{ vessel(' }));
    expect(syntax.status).toBe(400);
    expect(syntax.body.errors[0].extensions.code).toBe('GRAPHQL_PARSE_FAILED');
    const invalid = await bad(JSON.stringify({ query: '{ nope }' }));
    expect(invalid.status).toBe(400);
    expect(invalid.body.errors[0].extensions.code).toBe('GRAPHQL_VALIDATION_FAILED');
    const vars = await bad(
      JSON.stringify({ query: 'query($imo: String!) { vessel(imo: $imo) { name } }', variables: { imo: 7 } }),
    );
    expect(vars.status).toBe(400);
    expect(vars.body.errors[0].extensions.code).toBe('BAD_USER_INPUT');
  });

  it('reports resolver errors in the errors array with their code', async () => {
    const res = await gql(server.url, '{ vessel(imo: "9074728") { name } }', { key: server.key('ANALYST') });
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({ vessel: null });
    expect(res.body.errors![0]).toMatchObject({
      path: ['vessel'],
      extensions: { code: 'BAD_USER_INPUT', field: 'imo', rule: 'IMO_CHECK_DIGIT' },
    });
  });

  it('refuses missing and invalid credentials with one message (no oracle)', async () => {
    const none = await gql(server.url, VESSEL);
    const unknown = await gql(server.url, VESSEL, { key: 'tg_definitelynotakey' });
    const garbage = await gql(server.url, VESSEL, { headers: { authorization: 'Basic abc' } });
    for (const r of [none, unknown, garbage]) {
      expect(r.status).toBe(401);
      expect(r.body.errors![0]!.extensions!.code).toBe('UNAUTHENTICATED');
      expect(r.body.errors![0]!.message).toBe('Missing or invalid credentials');
    }
  });

  it("rejects a field outside the key's scopes before any resolver runs, naming the scope", async () => {
    const { secret } = await createKey(server, { scopes: 'read:port_calls' });
    statements.length = 0;
    const res = await gql(server.url, VESSEL, { key: secret });
    expect(res.status).toBe(403);
    expect(res.body.data).toBeUndefined();
    expect(res.body.errors![0]).toMatchObject({
      message: 'Missing required scope: read:vessels',
      extensions: { code: 'FORBIDDEN', requiredScopes: ['read:vessels'] },
    });
    expect(statements.filter((s) => /vessels/.test(s))).toEqual([]);
    // The allowed field of a partly allowed operation does not run either: portCalls would read
    // port_calls (vessel lookups may be served from a cache, port-call pages never are).
    statements.length = 0;
    const mixed = await gql(server.url, `{ portCalls(first: 1) { totalCount } ${VESSEL.slice(1, -1)} }`, {
      key: secret,
    });
    expect(mixed.status).toBe(403);
    expect(mixed.body.errors![0]!.extensions).toMatchObject({ requiredScopes: ['read:vessels'] });
    expect(statements.filter((s) => /port_calls/.test(s))).toEqual([]);
  });

  it('answers a document whose operation cannot be chosen with 400, not 500', async () => {
    const key = server.key('INSTITUTIONAL');
    const several = await gql(server.url, 'query A { viewer { plan } } query B { viewer { plan } }', { key });
    expect(several.status).toBe(400);
    expect(several.body.errors![0]!.extensions!.code).toBe('OPERATION_RESOLUTION_FAILURE');
    const res = await fetch(`${server.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': key },
      body: JSON.stringify({ query: 'query A { viewer { plan } }', operationName: 'Z' }),
    });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { errors: Array<{ message: string }> }).errors[0]!.message).toMatch(
      /Unknown operation named "Z"/,
    );
  });

  it('accepts the resource-first scope spelling on keys', async () => {
    const { secret } = await createKey(server, { scopes: 'vessels:read' });
    const res = await gql(server.url, VESSEL, { key: secret });
    expect(res.status).toBe(200);
    expect(res.body.data).toBeTruthy();
  });
});

describeEachDialect('demand control', (dialect) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ dialect, env: { GRAPHQL_MAX_DEPTH: '3', GRAPHQL_MAX_COST: '50' } });
  });
  afterAll(() => server?.close());

  it('refuses operations deeper than GRAPHQL_MAX_DEPTH before running them', async () => {
    const res = await gql(server.url, '{ auditLog { edges { node { id } } } }', {
      key: server.key('ANALYST'),
    });
    expect(res.status).toBe(400);
    expect(res.body.errors![0]).toMatchObject({
      message: 'Operation is 4 levels deep; the maximum is 3',
      extensions: { code: 'GRAPHQL_VALIDATION_FAILED' },
    });
  });

  it('refuses operations whose estimated cost exceeds GRAPHQL_MAX_COST, counting page sizes', async () => {
    const res = await gql(server.url, '{ auditLog(first: 100) { nodes { id operation } } }', {
      key: server.key('ANALYST'),
    });
    expect(res.status).toBe(400);
    expect(res.body.errors![0]!.message).toMatch(/estimated cost of 301; the maximum is 50/);
    const small = await gql(server.url, '{ vessel(imo: "9074729") { name } }', {
      key: server.key('ANALYST'),
    });
    expect(small.status).toBe(200);
  });
});
