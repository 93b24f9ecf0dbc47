import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeEachDialect } from '../helpers/env.js';
import { rest, startTestServer, type TestServer } from '../helpers/server.js';

describeEachDialect('GET /v1/vessels/lookup', (dialect) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ dialect });
  });
  afterAll(() => server?.close());

  it('returns the vessel for a valid IMO with X-API-Key and with Authorization: Bearer', async () => {
    for (const auth of [{ key: server.key('ANALYST') }, { bearer: server.key('ANALYST') }]) {
      const res = await rest(server.url, '/v1/vessels/lookup?imo=9074729', auth);
      expect(res.status).toBe(200);
      // Made here when the caller sent none: time-ordered (UUID version 7), for the audit log's index.
      expect(res.headers.get('x-request-id')).toMatch(
        /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/,
      );
      expect(res.body).toMatchObject({ imo: '9074729', name: 'Northern Tern', flag: 'SG', type: 'TANKER' });
    }
  });

  it('also answers under the /api/v1 alias', async () => {
    const res = await rest(server.url, '/api/v1/vessels/lookup?imo=9074729', { key: server.key('ANALYST') });
    expect(res.status).toBe(200);
    expect(res.body.imo).toBe('9074729');
  });

  it('rejects a bad check digit with 400 naming the rule', async () => {
    const res = await rest(server.url, '/v1/vessels/lookup?imo=9074728', { key: server.key('ANALYST') });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('BAD_USER_INPUT');
    expect(res.body.error.message).toMatch(/check digit.*must be 9/);
    expect(res.body.error.requestId).toBe(res.headers.get('x-request-id'));
  });

  it('rejects a value that is not 7 digits', async () => {
    for (const imo of ['123', '12345678', 'abcdefg']) {
      const res = await rest(server.url, `/v1/vessels/lookup?imo=${imo}`, { key: server.key('ANALYST') });
      expect(res.status).toBe(400);
      expect(res.body.error.message).toMatch(/exactly 7 digits/);
    }
  });

  it('requires the imo parameter', async () => {
    const res = await rest(server.url, '/v1/vessels/lookup', { key: server.key('ANALYST') });
    expect(res.status).toBe(400);
    expect(res.body.error.message).toMatch(/imo: is required/);
  });

  it('refuses a query parameter given twice rather than guess', async () => {
    const res = await rest(server.url, '/v1/vessels/lookup?imo=9074729&imo=1234567', {
      key: server.key('ANALYST'),
    });
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({
      code: 'BAD_USER_INPUT',
      message: 'imo: must be given once (got 2 values)',
      details: { field: 'imo' },
    });
  });

  it('answers 404 for an unknown IMO with a valid check digit', async () => {
    const res = await rest(server.url, '/v1/vessels/lookup?imo=1234567', { key: server.key('ANALYST') });
    expect(res.status).toBe(404);
    expect(res.body.error).toMatchObject({ code: 'NOT_FOUND', message: "Vessel '1234567' was not found" });
  });
});
