import { execFile } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { calculateJwkThumbprint, exportJWK, generateKeyPair, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp, type App } from '../../src/app.js';
import { SigningKey } from '../../src/auth/entities.js';
import { KeyStore } from '../../src/auth/keys.js';
import { loadConfig } from '../../src/config.js';
import { openAppDatabase } from '../../src/database.js';
import { seedDemo } from '../../src/seed.js';
import { systemClock } from '../../src/kernel/clock.js';
import { openSecretBox } from '../../src/kernel/secret-box.js';
import { createSeededTestDatabase, type TestDatabase } from '../helpers/db.js';
import { describeEachDialect, TEST_SECRETS_KEY } from '../helpers/env.js';
import { gql } from '../helpers/server.js';
import { command } from './helpers.js';

const run = promisify(execFile);

describeEachDialect('signing keys at rest: sealed with the secret box', (dialect) => {
  let database: TestDatabase;
  let client: { client_id: string; client_secret: string };
  const env = (secretsKey = TEST_SECRETS_KEY) => ({
    PORT: '0',
    HOST: '127.0.0.1',
    DATABASE_URL: database.url,
    LOG_LEVEL: 'warn',
    SECRETS_KEY: secretsKey!,
  });
  const config = () => loadConfig(env());
  const box = () => openSecretBox(config());
  const start = async (secretsKey?: string): Promise<{ app: App; url: string }> => {
    const app = await buildApp(loadConfig(env(secretsKey)), { db: database.db, logger: false });
    return { app, url: await app.listen() };
  };
  const issue = async (url: string): Promise<string> => {
    const res = await fetch(`${url}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'client_credentials', ...client }),
    });
    expect(res.status).toBe(200);
    return ((await res.json()) as { access_token: string }).access_token;
  };
  const accepted = async (url: string, token: string): Promise<boolean> => {
    const res = await gql(url, '{ viewer { scopes } }', { headers: { authorization: `Bearer ${token}` } });
    return res.status === 200 && res.body.errors === undefined;
  };
  /** The stored column as the database holds it (as JSON text), not as the ORM maps it. */
  const storedPrivateKeys = async (): Promise<Array<{ kid: string; private_jwk: string }>> => {
    const rows = (await database.db
      .em()
      .getConnection()
      .execute('select kid, private_jwk from oauth_signing_keys order by kid')) as Array<{
      kid: string;
      private_jwk: unknown;
    }>;
    return rows.map((r) => ({
      kid: r.kid,
      private_jwk: typeof r.private_jwk === 'string' ? r.private_jwk : JSON.stringify(r.private_jwk),
    }));
  };

  /** Stores the first key's private JWK in plaintext, as a version before sealing wrote it. */
  const makePlaintext = async (): Promise<{ kid: string; plain: { d: string } }> => {
    const [row] = await storedPrivateKeys();
    const stored = JSON.parse(row!.private_jwk) as { sealed?: string; d?: string };
    const plain = (stored.sealed ? JSON.parse(box().open(stored.sealed)) : stored) as { d: string };
    await database.db.em().nativeUpdate(SigningKey, { kid: row!.kid }, { privateJwk: plain });
    return { kid: row!.kid, plain };
  };

  beforeAll(async () => {
    const seeded = await createSeededTestDatabase(dialect);
    database = seeded.database;
    const demo = seeded.demo;
    const { json } = await command('clients create').run(
      { config: config(), db: database.db, clock: systemClock },
      {
        options: {
          account: demo.accounts[0]!.accountId,
          name: 'Key test',
          'redirect-uri': [],
          scopes: 'read:vessels',
          'grant-types': 'client_credentials',
        },
        positionals: [],
      },
    );
    client = json as typeof client;
  });
  afterAll(() => database?.drop());

  it('stores no private parameter readable; tokens signed before a restart still verify after it', async () => {
    const first = await start();
    const token = await issue(first.url);
    expect(await accepted(first.url, token)).toBe(true);
    await first.app.close();

    const rows = await storedPrivateKeys();
    expect(rows).toHaveLength(1);
    const stored = rows[0]!.private_jwk;
    const jwk = JSON.parse(box().open(JSON.parse(stored).sealed)) as { d: string; kty: string };
    expect(jwk).toMatchObject({ kty: 'EC', kid: rows[0]!.kid });
    expect(stored).not.toContain(jwk.d);
    expect(stored).not.toMatch(/"d"/);

    const second = await start();
    try {
      expect(await accepted(second.url, token)).toBe(true);
      const after = await issue(second.url);
      expect(await accepted(second.url, after)).toBe(true);
    } finally {
      await second.app.close();
    }
  });

  it('re-seals a plaintext private key left by an older version on the next start; its tokens keep working', async () => {
    const [row] = await storedPrivateKeys();
    const plain = JSON.parse(box().open(JSON.parse(row!.private_jwk).sealed)) as { d: string };
    await database.db.em().nativeUpdate(SigningKey, { kid: row!.kid }, { privateJwk: plain });
    expect((await storedPrivateKeys())[0]!.private_jwk).toContain(plain.d);

    const app = await start();
    try {
      const stored = (await storedPrivateKeys())[0]!.private_jwk;
      expect(stored).not.toContain(plain.d);
      expect(JSON.parse(box().open(JSON.parse(stored).sealed))).toEqual(plain);
      const token = await issue(app.url);
      expect(JSON.parse(Buffer.from(token.split('.')[0]!, 'base64url').toString()).kid).toBe(row!.kid);
      expect(await accepted(app.url, token)).toBe(true);
    } finally {
      await app.app.close();
    }
  });

  it('a plaintext row written by an older process while this one runs still signs (rolling upgrade)', async () => {
    const app = await start();
    try {
      const { kid } = await makePlaintext();
      // A fresh KeyStore, as after a restart or in another process: nothing cached for that kid.
      const keys = new KeyStore(() => database.db.em(), systemClock, box());
      expect((await keys.signingKey(database.db.em())).kid).toBe(kid);
    } finally {
      await app.app.close();
    }
  });

  it('processes sealing the same plaintext row at once seal it once', async () => {
    const { plain } = await makePlaintext();
    const stores = [1, 2].map(() => new KeyStore(() => database.db.em(), systemClock, box()));
    const sealed = await Promise.all(stores.map((s) => s.sealPlaintextKeys()));
    expect(sealed.reduce((a, b) => a + b)).toBe(1);
    const stored = (await storedPrivateKeys())[0]!.private_jwk;
    expect(stored).not.toContain(plain.d);
    expect(JSON.parse(box().open(JSON.parse(stored).sealed))).toEqual(plain);
    expect(await stores[0]!.sealPlaintextKeys()).toBe(0);
  });

  it('refuses to start with another SECRETS_KEY, naming the problem, and changes no key', async () => {
    const before = await storedPrivateKeys();
    await expect(start(randomBytes(32).toString('hex'))).rejects.toThrow(
      /sealed with master key \w+, but this process has key \w+ \(check SECRETS_KEY/,
    );
    expect(await storedPrivateKeys()).toEqual(before);
  });

  it('keys rotate-signing refuses a master key that cannot open the signing key, writing nothing', async () => {
    const before = await storedPrivateKeys();
    const dir = mkdtempSync(join(tmpdir(), 'tidegate-keyfile-'));
    const keyFile = join(dir, 'secrets.key');
    try {
      // Another shell, another directory: no SECRETS_KEY, and no key file where it would look.
      const noKey = await tidegate({ SECRETS_KEY: '', SECRETS_KEY_FILE: keyFile }, 'keys', 'rotate-signing');
      expect(noKey.code).toBe(1);
      expect(noKey.stderr).toMatch(/SECRETS_KEY is not set and SECRETS_KEY_FILE \(.*\) does not exist/);
      expect(existsSync(keyFile)).toBe(false);

      const wrong = await tidegate(
        { SECRETS_KEY: randomBytes(32).toString('hex') },
        'keys',
        'rotate-signing',
      );
      expect(wrong.code).toBe(1);
      expect(wrong.stderr).toMatch(
        /cannot open signing key .*SECRETS_KEY or SECRETS_KEY_FILE .*--replace-unreadable.*No key was added/,
      );
      expect(await storedPrivateKeys()).toEqual(before);

      const right = await tidegate({}, 'keys', 'rotate-signing', '--json');
      expect(right.code).toBe(0);
      const rows = await storedPrivateKeys();
      expect(rows.map((r) => r.kid)).toContain(JSON.parse(right.stdout).kid);
      expect(rows).toHaveLength(before.length + 1);

      // The way out when the master key is lost: a key sealed under the new one, signing at once.
      const lost = randomBytes(32).toString('hex');
      const replaced = await tidegate(
        { SECRETS_KEY: lost },
        'keys',
        'rotate-signing',
        '--replace-unreadable',
        '--json',
      );
      expect(replaced.code).toBe(0);
      const fresh = JSON.parse(replaced.stdout) as { kid: string; created_at: string; activates_at: string };
      expect(Date.parse(fresh.activates_at)).toBeLessThanOrEqual(Date.parse(fresh.created_at));
      const row = (await storedPrivateKeys()).find((r) => r.kid === fresh.kid)!;
      expect(
        JSON.parse(
          openSecretBox({ ...config(), secretsKey: Buffer.from(lost, 'hex') }).open(
            JSON.parse(row.private_jwk).sealed,
          ),
        ),
      ).toMatchObject({ kid: fresh.kid });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 90_000);

  /** The real `tidegate` bin on this database, with the test's SECRETS_KEY unless `env` overrides it. */
  async function tidegate(env: Record<string, string>, ...args: string[]) {
    try {
      const { stdout, stderr } = await run(process.execPath, ['src/bin/tidegate.mjs', ...args], {
        env: { ...process.env, DATABASE_URL: database.url, LOG_LEVEL: 'warn', ...env },
      });
      return { code: 0, stdout, stderr };
    } catch (e) {
      const err = e as { code: number; stdout: string; stderr: string };
      return { code: err.code, stdout: err.stdout, stderr: err.stderr };
    }
  }
});

describe('a developer database from before signing keys were sealed', () => {
  it('migrates and starts: the plaintext key is sealed, keeps signing, and its old tokens verify', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tidegate-legacy-'));
    const url = join(dir, 'legacy.sqlite');
    const db = await openAppDatabase(url);
    try {
      await db.orm.getMigrator().up({ to: 'Migration20261122000800Liquidity' });
      const config = loadConfig({ PORT: '0', DATABASE_URL: url, SECRETS_KEY: TEST_SECRETS_KEY! });
      // The row as the previous version wrote it: plaintext private JWK, no activation time.
      const { privateKey, publicKey } = await generateKeyPair('ES256', { extractable: true });
      const publicJwk = await exportJWK(publicKey);
      const kid = await calculateJwkThumbprint(publicJwk);
      const privateJwk = { ...(await exportJWK(privateKey)), kid, alg: 'ES256' };
      const createdAt = new Date(Date.now() - 60_000);
      await db
        .em()
        .getConnection()
        .execute(
          'insert into oauth_signing_keys (kid, private_jwk, public_jwk, created_at) values (?, ?, ?, ?)',
          [
            kid,
            JSON.stringify(privateJwk),
            JSON.stringify({ ...publicJwk, kid, alg: 'ES256', use: 'sig' }),
            db.em().getPlatform().processDateProperty(createdAt),
          ],
        );
      await db.migrate();
      const demo = await seedDemo(db, { clock: systemClock, config });
      // A token as the previous version issued it, signed with that plaintext key.
      const oldToken = await new SignJWT({
        client_id: 'tgc_legacy',
        scope: 'read:vessels',
        account_id: demo.accounts[0]!.accountId,
      })
        .setProtectedHeader({ alg: 'ES256', kid, typ: 'at+jwt' })
        .setIssuer(config.publicUrl)
        .setAudience(config.resourceUrl)
        .setSubject('tgc_legacy')
        .setJti(randomUUID())
        .setIssuedAt()
        .setExpirationTime('1h')
        .sign(privateKey);

      const app = await buildApp(config, { db, logger: false });
      const base = await app.listen();
      try {
        const [row] = await db.em().find(SigningKey, {});
        expect(row!.kid).toBe(kid);
        expect(row!.activatesAt.getTime()).toBe(createdAt.getTime());
        expect(JSON.stringify(row!.privateJwk)).not.toContain(privateJwk.d!);
        expect(
          JSON.parse(openSecretBox(config).open((row!.privateJwk as { sealed: string }).sealed)),
        ).toEqual(privateJwk);
        const res = await gql(base, '{ viewer { scopes } }', {
          headers: { authorization: `Bearer ${oldToken}` },
        });
        expect(res.body.errors).toBeUndefined();
        expect(res.body.data?.viewer).toEqual({ scopes: ['read:vessels'] });
      } finally {
        await app.close();
      }
    } finally {
      await db.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
