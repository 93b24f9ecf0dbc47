import { existsSync } from 'node:fs';
import type { CliCommand } from '../db/cli-command.js';
import type { OAuthClient } from './entities.js';
import { noLiveEvents } from '../kernel/events.js';

// The command table loads nothing heavy: each `run` imports what it needs (src/cli.ts).

const str = (value: unknown): string | undefined => (typeof value === 'string' ? value : undefined);
const strings = (value: unknown): string[] =>
  Array.isArray(value) ? value.map(String) : typeof value === 'string' ? [value] : [];

function clientJson(client: OAuthClient) {
  return {
    client_id: client.clientId,
    account_id: client.accountId,
    name: client.name,
    client_type: client.confidential ? 'confidential' : 'public',
    redirect_uris: client.redirectUris,
    scopes: client.scopes,
    grant_types: client.grantTypes,
    created_at: client.createdAt.toISOString(),
  };
}

/**
 * Operator commands for the authorization server. They write to the database directly; a
 * running server sees revocations within AUTH_DENYLIST_REFRESH and new signing keys at once.
 */
export const authCommands: CliCommand[] = [
  {
    name: 'accounts set-plan',
    description:
      'Move an account to another plan, audited; running servers apply it within WEBHOOK_POLL, open WebSocket connections included',
    usage: 'ID OBSERVER|ANALYST|PROFESSIONAL|INSTITUTIONAL',
    positionals: ['ID', 'PLAN'],
    async run({ db, clock }, { positionals }) {
      const [{ randomUUID }, { setAccountPlan }] = await Promise.all([
        import('node:crypto'),
        import('./plan-change.js'),
      ]);
      const change = await setAccountPlan(
        { em: db.em(), clock, events: noLiveEvents },
        { requestId: randomUUID(), credentialKind: 'cli' },
        positionals[0]!,
        positionals[1]!,
      );
      return {
        json: {
          account_id: change.accountId,
          previous_plan: change.previousPlan,
          plan: change.plan,
          changed_at: change.changedAt.toISOString(),
        },
        text: `Account ${change.accountId}: ${change.previousPlan} → ${change.plan}`,
      };
    },
  },
  {
    name: 'clients create',
    description: 'Register an OAuth application; the client secret is printed once',
    usage:
      '--account ID --name NAME --redirect-uri URI [--redirect-uri URI2] --scopes "read:vessels read:port_calls" [--grant-types "authorization_code refresh_token client_credentials"] [--public]',
    options: {
      account: { description: 'Account id the client acts for', type: 'string', required: true },
      name: { description: 'Name shown on the consent page', type: 'string', required: true },
      'redirect-uri': {
        description: 'An allowed redirect URI (repeat for several)',
        type: 'string',
        multiple: true,
      },
      scopes: {
        description: 'Space-separated scopes the client may request',
        type: 'string',
        required: true,
      },
      'grant-types': {
        description: 'Space-separated: authorization_code refresh_token client_credentials',
        type: 'string',
      },
      public: { description: 'A public client (no secret; PKCE only)', type: 'boolean' },
    },
    async run({ db, clock }, { options }) {
      const { createClient } = await import('./clients.js');
      const { client, secret } = await createClient({ em: db.em(), clock }, null, {
        accountId: str(options.account)!,
        name: str(options.name)!,
        redirectUris: strings(options['redirect-uri']),
        scopes: str(options.scopes)!,
        grantTypes: str(options['grant-types']),
        confidential: options.public !== true,
      });
      return {
        json: { ...clientJson(client), client_secret: secret },
        text: `Registered ${client.confidential ? 'confidential' : 'public'} client ${client.name}\n\n  client_id      ${client.clientId}\n${
          secret
            ? `  client_secret  ${secret}\n\nStore the secret now: it is shown only once.`
            : '\nPublic client: no secret; it must use PKCE.'
        }`,
      };
    },
  },
  {
    name: 'clients rotate-secret',
    description: 'Replace a client secret at once; the new secret is printed once',
    usage: 'CLIENT_ID',
    positionals: ['CLIENT_ID'],
    async run({ db }, { positionals }) {
      const { rotateClientSecret } = await import('./clients.js');
      const { client, secret } = await rotateClientSecret(db.em(), positionals[0]!);
      return {
        json: { client_id: client.clientId, client_secret: secret },
        text: `Rotated the secret of ${client.clientId}; the old secret no longer works.\n\n  ${secret}\n\nStore it now: it is shown only once.`,
      };
    },
  },
  {
    name: 'clients delete',
    description: 'Delete an OAuth application and revoke every token issued to it',
    usage: 'CLIENT_ID',
    positionals: ['CLIENT_ID'],
    async run({ db, clock }, { positionals }) {
      const [{ getClient }, { deleteClient }] = await Promise.all([
        import('./clients.js'),
        import('./tokens.js'),
      ]);
      const em = db.em();
      const client = await getClient(em, positionals[0]!);
      const { denied } = await deleteClient(em, { clock, events: noLiveEvents }, client);
      return {
        json: { client_id: client.clientId, deleted: true, revoked_access_tokens: denied.length },
        text: `Deleted ${client.clientId} (${client.name}); revoked ${denied.length} access token(s) and every refresh token.`,
      };
    },
  },
  {
    name: 'users reset-password',
    description:
      'Give a user a new random password, printed once (the way back from a lost demo banner); ends the console sessions and revokes the OAuth grants the old password opened',
    usage: '--email EMAIL [--json]',
    options: { email: { description: "The user's sign-in email", type: 'string', required: true } },
    async run({ db, clock }, { options }) {
      const [{ newSecret }, { setUserPassword }, { endUserSignIns }] = await Promise.all([
        import('../kernel/crypto.js'),
        import('../accounts/service.js'),
        import('./sessions.js'),
      ]);
      const password = newSecret('', 12);
      // One transaction: the new hash and the end of the old sign-ins commit together or not at all.
      const { user, ended } = await db.em().transactional(async (tx) => {
        const user = await setUserPassword(tx, str(options.email)!, password);
        return { user, ended: await endUserSignIns(tx, { clock, events: noLiveEvents }, user.id) };
      });
      const tokens = ended.revocation.denied.length;
      return {
        json: {
          email: user.email,
          password,
          sessions_ended: ended.sessions,
          grants_revoked: ended.grants,
          access_tokens_revoked: tokens,
        },
        text: `New password for ${user.email} (shown once; stored only as a scrypt hash): ${password}\nEnded ${ended.sessions} console session(s); revoked ${ended.grants} OAuth grant(s) and ${tokens} access token(s) (running servers refuse them within AUTH_DENYLIST_REFRESH).`,
      };
    },
  },
  {
    name: 'keys rotate-signing',
    description:
      'Add a new token signing key: published at once, signing after the JWKS cache time (--now: at once); old public keys stay published until their tokens expire. Refused unless this master key opens the current key; --replace-unreadable (the master key was lost): sign at once with a key sealed under this one',
    usage: '[--now] [--replace-unreadable]',
    options: {
      now: { description: 'Sign with the new key at once instead of after the overlap', type: 'boolean' },
      'replace-unreadable': {
        description: 'Replace signing keys that SECRETS_KEY cannot decrypt',
        type: 'boolean',
      },
    },
    async run({ db, clock, config }, { options }) {
      const [{ openSecretBox }, { SigningKey }, { JWKS_MAX_AGE_SECONDS, rotateSigningKey, SIGNING_ALG }] =
        await Promise.all([import('../kernel/secret-box.js'), import('./entities.js'), import('./keys.js')]);
      const em = db.em();
      const replaceUnreadable = options['replace-unreadable'] === true;
      const immediate = options.now === true || replaceUnreadable;
      // openSecretBox would create a fresh key file; with keys in the database, that key cannot be the servers'.
      if (
        !replaceUnreadable &&
        !config.secretsKey &&
        !existsSync(config.secretsKeyFile) &&
        (await em.count(SigningKey, {})) > 0
      ) {
        throw new Error(
          `no master key: SECRETS_KEY is not set and SECRETS_KEY_FILE (${config.secretsKeyFile}) does not exist, but the signing keys in the database are sealed with one; run with the servers' SECRETS_KEY or SECRETS_KEY_FILE. No key was added.`,
        );
      }
      const key = await rotateSigningKey({ em, clock }, openSecretBox(config), {
        immediate,
        replaceUnreadable,
      });
      const activatesAt = key.activatesAt.toISOString();
      return {
        json: {
          kid: key.kid,
          alg: SIGNING_ALG,
          created_at: key.createdAt.toISOString(),
          activates_at: activatesAt,
        },
        text: `New signing key ${key.kid} is published now and signs from ${activatesAt}${
          immediate
            ? ' (at once: verifiers with a cached JWKS reject new tokens until they refetch it)'
            : ` (after the ${JWKS_MAX_AGE_SECONDS} s JWKS cache time)`
        }; previous keys stay published for one access-token lifetime after that.`,
      };
    },
  },
];
