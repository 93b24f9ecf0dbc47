import { Client } from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { TEST_POSTGRES_URL, describeEachDialect } from '../helpers/env.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

/** Runs SQL as the PostgreSQL superuser on the server's maintenance database. */
async function asAdmin(sql: string): Promise<void> {
  const admin = new Client({ connectionString: TEST_POSTGRES_URL });
  await admin.connect();
  try {
    await admin.query(sql);
  } finally {
    await admin.end();
  }
}

describeEachDialect('/healthz and /readyz', (dialect) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ dialect, seed: false });
  });
  afterAll(() => server?.close());

  /** Makes the database unreachable for the server: a closed SQLite handle, or a PostgreSQL
   * database that refuses connections with its sessions killed; returns how to undo it. */
  async function outage(): Promise<() => Promise<void>> {
    if (dialect === 'sqlite') {
      await server.database.db.orm.close(true);
      return async () => void (await server.database.db.orm.reconnect());
    }
    const name = new URL(server.database.url).pathname.slice(1);
    await asAdmin(`alter database ${name} allow_connections false`);
    await asAdmin(`select pg_terminate_backend(pid) from pg_stat_activity where datname = '${name}'`);
    return () => asAdmin(`alter database ${name} allow_connections true`);
  }

  it('readyz turns 503 when the database is unreachable while healthz stays up, and recovers', async () => {
    expect((await fetch(`${server.url}/readyz`)).status).toBe(200);
    const restore = await outage();
    const ready = await fetch(`${server.url}/readyz`);
    expect(ready.status).toBe(503);
    expect(await ready.json()).toEqual({ status: 'unavailable', database: 'unreachable' });
    expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
    await restore();
    let status = 0;
    for (let i = 0; i < 50 && status !== 200; i++) {
      status = (await fetch(`${server.url}/readyz`)).status;
      if (status !== 200) await new Promise((r) => setTimeout(r, 100));
    }
    expect(status).toBe(200);
  });
});
