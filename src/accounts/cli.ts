import { parseDuration } from '../kernel/clock.js';
import type { CliCommand } from '../kernel/cli-command.js';
import { badInput } from '../kernel/errors.js';
import type { ApiKey } from './entities.js';
import {
  createAccount,
  createApiKey,
  createUser,
  revokeApiKey,
  rotateApiKey,
  type KeyPolicy,
} from './service.js';

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
    name: 'accounts create',
    description: 'Create an account on a plan',
    usage: '--name NAME --plan OBSERVER|ANALYST|PROFESSIONAL|INSTITUTIONAL',
    options: { name: { type: 'string', required: true }, plan: { type: 'string', required: true } },
    async run({ db, clock }, { options }) {
      const account = await createAccount(db.em(), clock, {
        name: str(options.name)!,
        plan: str(options.plan)!,
      });
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
      account: { type: 'string', required: true },
      email: { type: 'string', required: true },
      password: { type: 'string', required: true },
      name: { type: 'string' },
      admin: { type: 'boolean' },
    },
    async run({ db, clock }, { options }) {
      const user = await createUser(db.em(), clock, {
        accountId: str(options.account)!,
        email: str(options.email)!,
        password: str(options.password)!,
        name: str(options.name),
        admin: options.admin === true,
      });
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
      account: { type: 'string', required: true },
      scopes: { type: 'string' },
      name: { type: 'string' },
      'expires-in': { type: 'string' },
    },
    async run({ db, clock, config }, { options }) {
      let expiresAt: Date | null = null;
      const expiresIn = str(options['expires-in']);
      if (expiresIn) {
        try {
          expiresAt = new Date(clock.now().getTime() + parseDuration(expiresIn));
        } catch (e) {
          throw badInput('expires-in', (e as Error).message);
        }
      }
      const { key, secret } = await createApiKey(db.em(), clock, policyOf(config), {
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
    name: 'keys revoke',
    description: 'Revoke an API key at once',
    usage: 'ID',
    positionals: ['ID'],
    async run({ db, clock }, { positionals }) {
      const key = await revokeApiKey(db.em(), clock, positionals[0]!);
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
      const { key, secret, previous } = await rotateApiKey(db.em(), clock, policyOf(config), positionals[0]!);
      return {
        json: { ...keyJson(key), api_key: secret, previous: keyJson(previous) },
        text: `Rotated ${previous.id} → ${key.id}; the old key stops working at ${previous.expiresAt?.toISOString()}\n\n  ${secret}\n\nStore it now: it is shown only once.`,
      };
    },
  },
];
