import { readFileSync } from 'node:fs';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { verifyUserPassword } from '../../src/accounts/service.js';
import { COMMANDS, runCli } from '../../src/cli.js';
import { openAppDatabase } from '../../src/database.js';
import { emptyDatabase } from '../helpers/db.js';

/** Runs the CLI in this process (spawning ~30 processes would take minutes), capturing its output. */
async function cli(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const out = vi.spyOn(process.stdout, 'write').mockImplementation((chunk) => {
    stdout += String(chunk);
    return true;
  });
  const err = vi.spyOn(process.stderr, 'write').mockImplementation((chunk) => {
    stderr += String(chunk);
    return true;
  });
  try {
    const code = await runCli(args);
    return { code, stdout, stderr };
  } finally {
    out.mockRestore();
    err.mockRestore();
  }
}

describe('tidegate --help and --version', () => {
  it.each(COMMANDS.map((c) => [c.name, c] as const))(
    '`%s --help` exits 0 and describes every option',
    async (name, command) => {
      const { code, stdout, stderr } = await cli(...name.split(' '), '--help');
      expect(code, stderr).toBe(0);
      expect(stdout).toContain(`Usage: tidegate ${name}`);
      expect(stdout).toContain(command.description);
      for (const [option, spec] of Object.entries(command.options ?? {})) {
        expect(spec.description.length).toBeGreaterThan(5);
        expect(stdout).toMatch(new RegExp(`--${option}( VALUE)?\\s+${escape(spec.description)}`));
      }
      expect(stdout).toMatch(/--json\s+Print exactly one JSON object/);
    },
  );

  it('`help keys create` is the same as `keys create --help`, and a group lists its commands', async () => {
    expect((await cli('help', 'keys', 'create')).stdout).toBe((await cli('keys', 'create', '-h')).stdout);
    const group = await cli('keys', '--help');
    expect(group.code).toBe(0);
    expect(group.stdout).toContain('keys create');
    expect(group.stdout).toContain('keys list');
    expect(group.stdout).not.toContain('accounts create');
  });

  it('--version prints the package version; an unknown command is still a usage error (2)', async () => {
    const pkg = JSON.parse(readFileSync('package.json', 'utf8')) as { version: string };
    expect(await cli('--version')).toMatchObject({ code: 0, stdout: `tidegate ${pkg.version}\n` });
    expect((await cli('frobnicate')).code).toBe(2);
    expect((await cli('keys', 'create')).stderr).toMatch(/missing --account/);
  });
});

describe('accounts list, keys list and users reset-password', () => {
  let database: { url: string; drop(): Promise<void> };
  let demo: {
    accounts: Array<{ plan: string; account_id: string; api_key: string }>;
    admin: { email: string; password: string };
  };
  const before = process.env.DATABASE_URL;
  beforeAll(async () => {
    database = await emptyDatabase('sqlite');
    process.env.DATABASE_URL = database.url;
    const seeded = await cli('seed', '--demo', '--json');
    expect(seeded.code, seeded.stderr).toBe(0);
    // --json: one JSON object and no progress lines.
    expect(seeded.stderr).toBe('');
    demo = JSON.parse(seeded.stdout);
  });
  afterEach(() => vi.restoreAllMocks());
  afterAll(async () => {
    if (before === undefined) delete process.env.DATABASE_URL;
    else process.env.DATABASE_URL = before;
    await database?.drop();
  });

  it('lists accounts, filtered by plan, and refuses an unknown plan naming it', async () => {
    const all = JSON.parse((await cli('accounts', 'list', '--json')).stdout) as {
      accounts: Array<{ id: string; plan: string }>;
    };
    expect(all.accounts.map((a) => a.id).sort()).toEqual(demo.accounts.map((a) => a.account_id).sort());
    const pro = JSON.parse((await cli('accounts', 'list', '--plan', 'professional', '--json')).stdout);
    expect(pro.accounts).toEqual([
      expect.objectContaining({ plan: 'PROFESSIONAL', name: 'Demo Professional' }),
    ]);
    const text = await cli('accounts', 'list');
    expect(text.stdout).toContain('Demo Institutional');
    const bad = await cli('accounts', 'list', '--plan', 'gold');
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/plan: must be one of OBSERVER/);
  });

  it("lists an account's keys without their secrets; an unknown account is an error", async () => {
    const account = demo.accounts[0]!;
    const listed = await cli('keys', 'list', '--account', account.account_id, '--json');
    expect(listed.code, listed.stderr).toBe(0);
    const { keys } = JSON.parse(listed.stdout) as {
      keys: Array<{ prefix: string; revoked_at: string | null }>;
    };
    expect(keys).toHaveLength(1);
    expect(account.api_key.startsWith(keys[0]!.prefix)).toBe(true);
    expect(listed.stdout).not.toContain(account.api_key);
    const unknown = await cli('keys', 'list', '--account', '00000000-0000-4000-8000-000000000000');
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/Account '00000000-0000-4000-8000-000000000000' was not found/);
  });

  it('resets a password: the new one (shown once) works, the old one no longer does', async () => {
    const reset = await cli('users', 'reset-password', '--email', demo.admin.email.toUpperCase(), '--json');
    expect(reset.code, reset.stderr).toBe(0);
    const { password, ...rest } = JSON.parse(reset.stdout) as { password: string };
    expect(password).not.toBe(demo.admin.password);
    // Nothing was signed in: it says so (test/auth/reset-password.e2e.test.ts ends real sign-ins).
    expect(rest).toEqual({
      email: demo.admin.email,
      sessions_ended: 0,
      grants_revoked: 0,
      access_tokens_revoked: 0,
    });
    const db = await openAppDatabase(database.url);
    try {
      expect(await verifyUserPassword(db.em(), demo.admin.email, password)).not.toBeNull();
      expect(await verifyUserPassword(db.em(), demo.admin.email, demo.admin.password)).toBeNull();
      const stored = await db.em().getConnection().execute('select password_hash from users');
      expect(JSON.stringify(stored)).not.toContain(password);
    } finally {
      await db.close();
    }
    const missing = await cli('users', 'reset-password', '--email', 'nobody@example.com');
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/User 'nobody@example.com' was not found/);
  });
});

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
