import { randomBytes } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/knex';
import { Account } from './accounts/entities.js';
import { createAccount, createApiKey, createUser, type KeyPolicy } from './accounts/service.js';
import type { Config } from './config.js';
import type { Clock } from './kernel/clock.js';
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
