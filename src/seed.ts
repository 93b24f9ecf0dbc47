import { randomBytes } from 'node:crypto';
import { Worker } from 'node:worker_threads';
import type { EntityManager } from '@mikro-orm/knex';
import { Account } from './accounts/entities.js';
import { createAccount, createApiKey, createUser, type KeyPolicy } from './accounts/service.js';
import { loadConfig, type Config } from './config.js';
import { databaseOptionsOf, openAppDatabase } from './database.js';
import { systemClock, type Clock } from './kernel/clock.js';
import { PLAN_ORDER, planLabel, type Plan } from './kernel/plans.js';
import { MODULES } from './modules.js';
import type { ReadModelVersions } from './db/versions.js';
import type { Database } from './db/orm.js';

export interface DemoCredentials {
  accounts: Array<{ plan: Plan; accountId: string; apiKey: string }>;
  admin: { email: string; password: string; accountId: string };
}

export async function isEmpty(em: EntityManager): Promise<boolean> {
  return (await em.count(Account, {})) === 0;
}

/**
 * Creates the demo dataset in one transaction: an account per plan with an API key each (all
 * non-admin scopes), an admin user, and every domain's demo data. Returns the secrets, which
 * exist nowhere else — they are stored only as hashes. `versions` is the running gateway's, when
 * one runs in this process: its read models are told once the seed has committed.
 */
export async function seedDemo(
  db: Database,
  services: { clock: Clock; config: Config; versions?: ReadModelVersions },
): Promise<DemoCredentials> {
  const policy: KeyPolicy = {
    maxActiveKeys: services.config.maxActiveApiKeys,
    rotationGraceMs: services.config.apiKeyRotationGraceMs,
  };
  const credentials = await db.em().transactional(async (em) => {
    const accounts: DemoCredentials['accounts'] = [];
    for (const plan of PLAN_ORDER) {
      const account = await createAccount(
        { em, clock: services.clock },
        { name: `Demo ${planLabel(plan)}`, plan },
      );
      const { secret } = await createApiKey({ em, clock: services.clock }, policy, {
        accountId: account.id,
        name: `Demo ${planLabel(plan)} key`,
      });
      accounts.push({ plan, accountId: account.id, apiKey: secret });
    }
    const adminAccount = accounts[accounts.length - 1]!;
    const password = randomBytes(12).toString('base64url');
    await createUser(
      { em, clock: services.clock },
      {
        accountId: adminAccount.accountId,
        email: 'admin@tidegate.local',
        name: 'Demo Admin',
        password,
        admin: true,
      },
    );
    await em.flush();
    for (const module of MODULES) await module.seedDemo?.(em, services);
    return {
      accounts,
      admin: { email: 'admin@tidegate.local', password, accountId: adminAccount.accountId },
    };
  });
  services.versions?.announce();
  return credentials;
}

/**
 * What the server does to its database before it serves, in a worker thread with a connection of
 * its own: applies the pending migrations and, when `seed` is set and the database has no account,
 * seeds the demo. Resolves with the demo's credentials when it seeded, null otherwise; the serving
 * thread then opens the database as it would any migrated one.
 *
 * Why a thread: V8 decides where an allocation site's objects go by what survived its young
 * collections, and applying every migration to a new database (MikroORM's migrator, knex's
 * builders) left the serving isolate allocating a small read's objects straight into the old
 * generation for the rest of its life. Measured on one SQLite file under the same small read: the
 * gateway that had migrated the new file itself spent about 20 % more CPU per request, with twice
 * the p99, than one started on the migrated file; migrated in a worker, the two matched. The
 * worker's isolate ends with the work.
 */
export async function prepareDatabaseApart(
  env: Record<string, string | undefined>,
  seed: boolean,
): Promise<DemoCredentials | null> {
  const module = import.meta.url;
  const worker = new Worker(PREPARE_WORKER, {
    eval: true,
    workerData: {
      module,
      // Under `npm run dev` this module is TypeScript, and Node 20 does not pass tsx's loader on to a
      // worker: it registers it itself (tsx is a dev dependency, so only then).
      loader: module.endsWith('.ts') ? import.meta.resolve('tsx/esm/api') : null,
      // Strings only: the worker loads the configuration from them again.
      env: { ...env },
      seed,
    },
  });
  return new Promise<DemoCredentials | null>((resolve, reject) => {
    worker.once(
      'message',
      (message: { done: true; credentials: DemoCredentials | null } | { error: unknown }) =>
        'done' in message ? resolve(message.credentials) : reject(message.error),
    );
    worker.once('error', reject);
    worker.once('exit', (code) =>
      reject(new Error(`the worker preparing the database exited (code ${code}) before it reported`)),
    );
  });
}

/**
 * Whether a start has anything for `prepareDatabaseApart` to do: a migration is pending, or `seed` is
 * set and the database has no account. Asked on the serving thread (listing migrations allocates
 * little); a restart on a migrated, seeded database starts no worker.
 */
export async function preparationPending(url: string, seed: boolean): Promise<boolean> {
  const db = await openAppDatabase(url);
  try {
    if ((await db.pendingMigrations()).length > 0) return true;
    return seed && (await isEmpty(db.em()));
  } finally {
    await db.close();
  }
}

/** Imports this module (its `.ts` source under tsx, its build otherwise) and runs `prepareDatabaseHere`. */
const PREPARE_WORKER = `
const { parentPort, workerData } = require('node:worker_threads');
(workerData.loader ? import(workerData.loader).then((tsx) => tsx.register()) : Promise.resolve())
  .then(() => import(workerData.module))
  .then((seed) => seed.prepareDatabaseHere(workerData.env, workerData.seed))
  .then(
    (credentials) => parentPort.postMessage({ done: true, credentials }),
    (error) => parentPort.postMessage({ error }),
  );
`;

/** `prepareDatabaseApart`'s work, in the thread that calls it (the system clock). */
export async function prepareDatabaseHere(
  env: Record<string, string | undefined>,
  seed: boolean,
): Promise<DemoCredentials | null> {
  const config = loadConfig(env);
  const db = await openAppDatabase(config.databaseUrl, databaseOptionsOf(config));
  try {
    await db.migrate();
    if (!seed || !(await isEmpty(db.em()))) return null;
    return await seedDemo(db, { clock: systemClock, config });
  } finally {
    await db.close();
  }
}

export function formatDemoCredentials(creds: DemoCredentials, baseUrl: string): string {
  const lines = [
    '',
    '================ tidegate demo credentials (shown once; stored only as hashes) ================',
    ...creds.accounts.map(
      (a) => `  ${planLabel(a.plan).padEnd(13)} account ${a.accountId}  API key ${a.apiKey}`,
    ),
    `  Admin user     ${creds.admin.email}  password ${creds.admin.password}`,
    `  Try:  curl -H "X-API-Key: <key>" "${baseUrl}/v1/vessels/lookup?imo=9074729"`,
    '===============================================================================================',
    '',
  ];
  return lines.join('\n');
}
