import { parseDuration } from '../kernel/clock.js';
import type { CliCommand } from '../db/cli-command.js';
import { badInput, notFound } from '../kernel/errors.js';
import type { ApiKey } from './entities.js';
import type { KeyPolicy } from './service.js';

// The command table loads nothing heavy: each `run` imports the entities and services it needs
// (see the start-up note in src/cli.ts).

function keyJson(key: ApiKey) {
  return {
    id: key.id,
    account_id: key.account.id,
    name: key.name,
    prefix: key.prefix,
    scopes: key.scopes,
    created_at: key.createdAt.toISOString(),
    expires_at: key.expiresAt?.toISOString() ?? null,
    revoked_at: key.revokedAt?.toISOString() ?? null,
  };
}

const policyOf = (config: { maxActiveApiKeys: number; apiKeyRotationGraceMs: number }): KeyPolicy => ({
  maxActiveKeys: config.maxActiveApiKeys,
  rotationGraceMs: config.apiKeyRotationGraceMs,
});

const str = (value: unknown): string | undefined => (typeof value === 'string' ? value : undefined);

export const accountCommands: CliCommand[] = [
  {
    name: 'accounts list',
    description: 'List accounts with their plan',
    usage: '[--plan PLAN] [--json]',
    options: { plan: { description: 'Only accounts on this plan', type: 'string' } },
    async run({ db }, { options }) {
      const [{ PLAN_ORDER, parsePlan }, { Account }] = await Promise.all([
        import('../kernel/plans.js'),
        import('./entities.js'),
      ]);
      const plan = str(options.plan);
      const parsed = plan === undefined ? undefined : parsePlan(plan);
      if (plan !== undefined && !parsed)
        throw badInput('plan', `must be one of ${PLAN_ORDER.join(', ')} (got '${plan}')`);
      const accounts = await db
        .em()
        .find(Account, parsed ? { plan: parsed } : {}, { orderBy: { createdAt: 'asc', id: 'asc' } });
      const rows = accounts.map((a) => ({
        id: a.id,
        name: a.name,
        plan: a.plan,
        created_at: a.createdAt.toISOString(),
      }));
      return {
        json: { accounts: rows },
        text:
          rows.length === 0
            ? 'No accounts'
            : rows.map((a) => `${a.id}  ${a.plan.padEnd(13)}  ${a.name}`).join('\n'),
      };
    },
  },
  {
    name: 'accounts create',
    description: 'Create an account on a plan',
    usage: '--name NAME --plan OBSERVER|ANALYST|PROFESSIONAL|INSTITUTIONAL',
    options: {
      name: { description: 'Display name of the account', type: 'string', required: true },
      plan: {
        description: 'Plan: OBSERVER, ANALYST, PROFESSIONAL or INSTITUTIONAL',
        type: 'string',
        required: true,
      },
    },
    async run({ db, clock }, { options }) {
      const { createAccount } = await import('./service.js');
      const account = await createAccount(
        { em: db.em(), clock },
        {
          name: str(options.name)!,
          plan: str(options.plan)!,
        },
      );
      return {
        json: {
          id: account.id,
          name: account.name,
          plan: account.plan,
          created_at: account.createdAt.toISOString(),
        },
        text: `Created account ${account.id} (${account.name}, ${account.plan})`,
      };
    },
  },
  {
    name: 'users create',
    description: 'Create a user (console and OAuth login) in an account',
    usage: '--account ID --email EMAIL --password PASSWORD [--name NAME] [--admin]',
    options: {
      account: { description: 'Account id the user belongs to', type: 'string', required: true },
      email: { description: 'Sign-in email (stored lower-case)', type: 'string', required: true },
      password: { description: 'Initial password (stored as a scrypt hash)', type: 'string', required: true },
      name: { description: 'Display name', type: 'string' },
      admin: { description: 'Give the user the admin scope', type: 'boolean' },
    },
    async run({ db, clock }, { options }) {
      const { createUser } = await import('./service.js');
      const user = await createUser(
        { em: db.em(), clock },
        {
          accountId: str(options.account)!,
          email: str(options.email)!,
          password: str(options.password)!,
          name: str(options.name),
          admin: options.admin === true,
        },
      );
      return {
        json: {
          id: user.id,
          account_id: user.account.id,
          email: user.email,
          name: user.name,
          roles: user.roles,
        },
        text: `Created user ${user.id} <${user.email}>${user.roles.includes('admin') ? ' (admin)' : ''}`,
      };
    },
  },
  {
    name: 'keys create',
    description: 'Create an API key; the secret is printed once',
    usage: '--account ID [--scopes "read:vessels read:port_calls"] [--name NAME] [--expires-in 30d]',
    options: {
      account: { description: 'Account id the key acts for', type: 'string', required: true },
      scopes: { description: 'Space-separated scopes (default: every scope but admin)', type: 'string' },
      name: { description: 'A label to recognise the key by', type: 'string' },
      'expires-in': { description: 'Lifetime, e.g. 30d or 12h (default: no expiry)', type: 'string' },
    },
    async run({ db, clock, config }, { options }) {
      const { createApiKey } = await import('./service.js');
      let expiresAt: Date | null = null;
      const expiresIn = str(options['expires-in']);
      if (expiresIn) {
        try {
          expiresAt = new Date(clock.now().getTime() + parseDuration(expiresIn));
        } catch (e) {
          throw badInput('expires-in', (e as Error).message);
        }
      }
      const { key, secret } = await createApiKey({ em: db.em(), clock }, policyOf(config), {
        accountId: str(options.account)!,
        name: str(options.name),
        scopes: str(options.scopes),
        expiresAt,
      });
      return {
        json: { ...keyJson(key), api_key: secret },
        text: `Created API key ${key.id} (${key.scopes.length} scopes)\n\n  ${secret}\n\nStore it now: it is shown only once.`,
      };
    },
  },
  {
    name: 'keys list',
    description: "List an account's API keys (prefix, scopes, expiry; never the secret)",
    usage: '--account ID [--json]',
    options: { account: { description: 'Account id', type: 'string', required: true } },
    async run({ db }, { options }) {
      const { Account, ApiKey } = await import('./entities.js');
      const em = db.em();
      const accountId = str(options.account)!;
      if (!(await em.count(Account, { id: accountId }))) throw notFound('Account', accountId);
      const keys = await em.find(
        ApiKey,
        { account: accountId },
        { orderBy: { createdAt: 'asc', id: 'asc' } },
      );
      const rows = keys.map(keyJson);
      const state = (k: (typeof rows)[number]) =>
        k.revoked_at ? 'revoked' : k.expires_at ? `expires ${k.expires_at}` : 'active';
      return {
        json: { keys: rows },
        text:
          rows.length === 0
            ? 'No API keys'
            : rows
                .map((k) => `${k.id}  ${k.prefix}…  ${state(k)}  ${k.name}  [${k.scopes.join(' ')}]`)
                .join('\n'),
      };
    },
  },
  {
    name: 'keys revoke',
    description: 'Revoke an API key at once',
    usage: 'ID',
    positionals: ['ID'],
    async run({ db, clock }, { positionals }) {
      const { revokeApiKey } = await import('./service.js');
      const key = await revokeApiKey({ em: db.em(), clock }, positionals[0]!);
      return { json: keyJson(key), text: `Revoked API key ${key.id}` };
    },
  },
  {
    name: 'keys rotate',
    description:
      'Replace an API key; the old one keeps working for the grace period (API_KEY_ROTATION_GRACE)',
    usage: 'ID',
    positionals: ['ID'],
    async run({ db, clock, config }, { positionals }) {
      const { rotateApiKey } = await import('./service.js');
      const { key, secret, previous } = await rotateApiKey(
        { em: db.em(), clock },
        policyOf(config),
        positionals[0]!,
      );
      return {
        json: { ...keyJson(key), api_key: secret, previous: keyJson(previous) },
        text: `Rotated ${previous.id} → ${key.id}; the old key stops working at ${previous.expiresAt?.toISOString()}\n\n  ${secret}\n\nStore it now: it is shown only once.`,
      };
    },
  },
];
