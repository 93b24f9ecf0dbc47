import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';

describe('/healthz and /readyz', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ seed: false });
  });
  afterAll(() => server?.close());

  it('readyz turns 503 when the database is unreachable while healthz stays up', async () => {
    expect((await fetch(`${server.url}/readyz`)).status).toBe(200);
    await server.database.db.orm.close(true);
    const ready = await fetch(`${server.url}/readyz`);
    expect(ready.status).toBe(503);
    expect(await ready.json()).toEqual({ status: 'unavailable', database: 'unreachable' });
    expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
    await server.database.db.orm.reconnect();
  });
});
