import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './helpers/server.js';

/** The benchmark's floor routes (src/app.ts, BENCH_ROUTES): the demo vessel's lookup answer, bare. */
describe('GET and POST /bench/bare with BENCH_ROUTES=true', () => {
  let server: TestServer;
  let lookup: Record<string, unknown>;
  beforeAll(async () => {
    server = await startTestServer({ env: { BENCH_ROUTES: 'true' } });
    const response = await fetch(`${server.url}/v1/vessels/lookup?imo=9074729`, {
      headers: { 'x-api-key': server.key('INSTITUTIONAL') },
    });
    expect(response.status).toBe(200);
    lookup = (await response.json()) as Record<string, unknown>;
  });
  afterAll(() => server?.close());

  /** The lookup's answer with the bench route's fixed id in place of the seed's random one. */
  const expected = () => ({ ...lookup, id: 'f4175cb0-94da-4364-b0e7-ec75bdb38aa6' });

  it('GET answers the demo vessel exactly as /v1/vessels/lookup spells it', async () => {
    const response = await fetch(`${server.url}/bench/bare`);
    expect(response.status).toBe(200);
    const text = await response.text();
    expect(JSON.parse(text)).toEqual(expected());
    // Same members in the same order: the same bytes but for the id.
    expect(Object.keys(JSON.parse(text) as object)).toEqual(Object.keys(lookup));
  });

  it('POST reads and parses a JSON body, then answers the same vessel', async () => {
    const response = await fetch(`${server.url}/bench/bare`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': server.key('INSTITUTIONAL') },
      body: JSON.stringify({ query: '{ vessel(imo: "9074729") { imo name flag } }' }),
    });
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual(expected());
  });

  it('POST with a body that is not JSON is refused before the route answers: the body is parsed', async () => {
    const response = await fetch(`${server.url}/bench/bare`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"query": ',
    });
    expect(response.status).toBe(400);
    const text = await response.text();
    expect(text).toContain('BAD_USER_INPUT');
    expect(text).toContain('The body is not valid JSON');
    expect(text).not.toContain('Northern Tern');
  });
});

describe('/bench/bare without BENCH_ROUTES', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ seed: false });
  });
  afterAll(() => server?.close());

  it('is not served, on either method', async () => {
    expect((await fetch(`${server.url}/bench/bare`)).status).toBe(404);
    const post = await fetch(`${server.url}/bench/bare`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{}',
    });
    expect(post.status).toBe(404);
  });
});
