import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { emptyDatabase } from '../helpers/db.js';
import { describeEachDialect } from '../helpers/env.js';
import { rest, startTestServer, type TestServer } from '../helpers/server.js';

const run = promisify(execFile);

/** Runs the real `tidegate` bin against a database; never throws, returns exit code and output. */
async function tidegate(
  databaseUrl: string,
  ...args: string[]
): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, ['src/bin/tidegate.mjs', ...args], {
      env: { ...process.env, DATABASE_URL: databaseUrl, LOG_LEVEL: 'warn' },
    });
    return { code: 0, stdout, stderr };
  } catch (e) {
    const err = e as { code: number; stdout: string; stderr: string };
    return { code: err.code, stdout: err.stdout, stderr: err.stderr };
  }
}

describeEachDialect('tidegate CLI', (dialect) => {
  let database: { url: string; drop(): Promise<void> };
  let db: string;
  beforeAll(async () => {
    database = await emptyDatabase(dialect);
    db = database.url;
  });
  afterAll(() => database?.drop());

  it('creates accounts, users and keys on a fresh database, printing one JSON object each', async () => {
    const account = await tidegate(
      db,
      'accounts',
      'create',
      '--name',
      'Harbour Ops',
      '--plan',
      'professional',
      '--json',
    );
    expect(account.code).toBe(0);
    const acc = JSON.parse(account.stdout);
    expect(acc).toMatchObject({ name: 'Harbour Ops', plan: 'PROFESSIONAL' });

    const user = await tidegate(
      db,
      'users',
      'create',
      '--account',
      acc.id,
      '--email',
      'Ops@Example.com',
      '--password',
      'correct horse battery',
      '--admin',
      '--json',
    );
    expect(user.code).toBe(0);
    expect(JSON.parse(user.stdout)).toMatchObject({ email: 'ops@example.com', roles: ['admin'] });
    expect(user.stdout).not.toContain('correct horse');

    const key = await tidegate(
      db,
      'keys',
      'create',
      '--account',
      acc.id,
      '--scopes',
      'vessels:read port-calls:read',
      '--name',
      'ci',
      '--expires-in',
      '30d',
      '--json',
    );
    expect(key.code).toBe(0);
    const k = JSON.parse(key.stdout);
    expect(k.api_key).toMatch(/^tg_/);
    expect(k.scopes).toEqual(['read:port_calls', 'read:vessels']);
    expect(new Date(k.expires_at).getTime() - new Date(k.created_at).getTime()).toBeCloseTo(
      30 * 86_400_000,
      -4,
    );

    const rotated = await tidegate(db, 'keys', 'rotate', k.id, '--json');
    expect(rotated.code).toBe(0);
    const r = JSON.parse(rotated.stdout);
    expect(r.api_key).toMatch(/^tg_/);
    expect(r.api_key).not.toBe(k.api_key);
    expect(r.previous.id).toBe(k.id);
  });

  it('fails with a message on stderr and a non-zero exit code', async () => {
    const cases: Array<[string[], RegExp]> = [
      [
        ['accounts', 'create', '--name', 'X', '--plan', 'gold'],
        /plan: must be one of OBSERVER, ANALYST, PROFESSIONAL, INSTITUTIONAL \(got 'gold'\)/,
      ],
      [['accounts', 'create', '--name', 'X'], /missing --plan/],
      [
        ['keys', 'create', '--account', '00000000-0000-0000-0000-000000000000'],
        /Account '00000000-0000-0000-0000-000000000000' was not found/,
      ],
      [['keys', 'revoke'], /expected ID/],
      [['keys', 'create', '--account', 'x', '--bogus'], /Unknown option '--bogus'/],
      [['frobnicate'], /unknown command 'frobnicate'/],
      [['audit', 'export', '--account', 'not-a-uuid'], /accountId: must be a UUID/],
    ];
    // Each case is a process of its own, and none writes: they run side by side, on a database
    // migrated first (every command migrates before it runs, and migrations are one process's work).
    expect((await tidegate(db, 'migrate')).code).toBe(0);
    const [bare, ...results] = await Promise.all([
      tidegate(db),
      ...cases.map(([args]) => tidegate(db, ...args, '--json')),
    ]);
    cases.forEach(([args, message], i) => {
      const res = results[i]!;
      expect(res.code, args.join(' ')).not.toBe(0);
      expect(res.stderr, args.join(' ')).toMatch(message);
      expect(res.stdout, args.join(' ')).toBe('');
    });
    expect(bare.code).toBe(2);
    expect(bare.stderr).toMatch(/Usage: tidegate <command>/);
    expect(bare.stdout).toBe('');
  });

  it('exports the audit log as JSON lines', async () => {
    const res = await tidegate(db, 'audit', 'export', '--since', '2000-01-01T00:00:00Z');
    expect(res.code).toBe(0);
    expect(res.stderr).toMatch(/Exported \d+ audit records/);
    const bad = await tidegate(db, 'audit', 'export', '--since', 'yesterday');
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/since: 'yesterday' is not an ISO-8601 date-time/);
  });
});

describeEachDialect('a key revoked with the CLI', (dialect) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ dialect, env: { REVOCATION_POLL: '1s' } });
  });
  afterAll(() => server?.close());

  it('gets 401 from a running server within moments', async () => {
    const created = await tidegate(
      server.database.url,
      'keys',
      'create',
      '--account',
      server.demo.accounts[1]!.accountId,
      '--json',
    );
    const key = JSON.parse(created.stdout);
    expect((await rest(server.url, '/v1/vessels/lookup?imo=9074729', { key: key.api_key })).status).toBe(200);
    expect((await tidegate(server.database.url, 'keys', 'revoke', key.id, '--json')).code).toBe(0);
    let status = 200;
    for (let i = 0; i < 40 && status === 200; i++) {
      await new Promise((r) => setTimeout(r, 250));
      status = (await rest(server.url, '/v1/vessels/lookup?imo=9074729', { key: key.api_key })).status;
    }
    expect(status).toBe(401);
  });
});
