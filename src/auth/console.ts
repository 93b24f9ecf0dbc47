import type { FastifyReply, FastifyRequest } from 'fastify';
import type { EntityManager } from '@mikro-orm/knex';
import type { ApiKey, User } from '../accounts/entities.js';
import {
  createApiKey,
  isKeyActive,
  listApiKeys,
  revokeApiKey,
  rotateApiKey,
  verifyUserPassword,
  type KeyPolicy,
} from '../accounts/service.js';
import { AuditRecord } from '../audit/entities.js';
import { stageEvents } from '../events/stage.js';
import { AppError } from '../kernel/errors.js';
import { planLabel } from '../kernel/plans.js';
import { ALL_SCOPES, DEFAULT_KEY_SCOPES, SCOPES } from '../kernel/scopes.js';
import { createClient, getClient, GRANT_TYPES, listClients, rotateClientSecret } from './clients.js';
import type { AuthSession, OAuthClient } from './entities.js';
import { ConsoleGateway } from './console-gateway.js';
import { ConsoleReports } from './console-reports.js';
import { consoleNav, errorPage, hidden, html, sendPage, type SafeHtml } from './html.js';
import type { AuthRuntime } from './runtime.js';
import {
  currentSession,
  endSession,
  loginCsrfToken,
  loginCsrfValid,
  sessionCsrfValid,
  setFlash,
  startSession,
  takeFlash,
  type SignedIn,
} from './sessions.js';
import { deleteClient } from './tokens.js';

type Body = Record<string, unknown>;
const text = (value: unknown): string => (typeof value === 'string' ? value : '');
const list = (value: unknown): string[] =>
  Array.isArray(value) ? value.map(String) : typeof value === 'string' ? [value] : [];

/** Only our own pages may be returned to after sign-in: no open redirect through return_to. */
export function safeReturnTo(value: unknown): string {
  const target = text(value);
  if (
    target.startsWith('/oauth/authorize?') ||
    target === '/console' ||
    target === '/playground' ||
    /^\/console\/[\w/-]*$/.test(target)
  )
    return target;
  return '/console';
}

export class ConsolePages {
  /** The pages that only read through the schema: Usage and Request log. */
  readonly reports: ConsoleReports;

  constructor(
    private readonly runtime: AuthRuntime,
    private readonly gateway: ConsoleGateway,
  ) {
    this.reports = new ConsoleReports(gateway, (request, reply) => this.guard(request, reply));
  }

  private get security() {
    return { secure: this.runtime.services.config.publicUrl.startsWith('https:') };
  }

  private get keyPolicy(): KeyPolicy {
    const { config } = this.runtime.services;
    return { maxActiveKeys: config.maxActiveApiKeys, rotationGraceMs: config.apiKeyRotationGraceMs };
  }

  loginForm(
    request: FastifyRequest,
    reply: FastifyReply,
    status = 200,
    error?: string,
    email = '',
  ): FastifyReply {
    const query = request.query as Record<string, unknown>;
    const body = (request.body ?? {}) as Body;
    const returnTo = safeReturnTo(body.return_to ?? query.return_to);
    const csrf = loginCsrfToken(request, reply, this.security);
    return sendPage(
      reply,
      status,
      'Sign in',
      html`<section class="card login">
        <h1>Sign in to tidegate</h1>
        ${error ? html`<p class="error" role="alert">${error}</p>` : ''}
        <form method="post" action="/console/login">
          ${hidden('csrf', csrf)}${hidden('return_to', returnTo)}
          <label for="email">Email</label
          ><input type="email" id="email" name="email" value="${email}" autocomplete="username" required />
          <label for="password">Password</label
          ><input type="password" id="password" name="password" autocomplete="current-password" required />
          <div class="actions"><button type="submit" id="sign-in">Sign in</button></div>
        </form>
      </section>`,
    );
  }

  /** Sign-in: CSRF, throttle (per IP and per IP + email), password, session. */
  async login(request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
    const body = (request.body ?? {}) as Body;
    const email = text(body.email).trim().toLowerCase();
    if (!loginCsrfValid(request, body.csrf))
      return this.loginForm(request, reply, 403, 'The form expired; please try again.', email);
    const wait = await this.runtime.loginThrottle.retryAfter(request.ip, email);
    if (wait > 0) {
      reply.header('retry-after', String(wait));
      return this.loginForm(
        request,
        reply,
        429,
        `Too many failed sign-in attempts from your network; try again in ${Math.ceil(wait / 60)} minute(s).`,
        email,
      );
    }
    const user = await verifyUserPassword(this.runtime.em, email, text(body.password));
    if (!user) {
      await this.runtime.loginThrottle.fail(request.ip, email);
      return this.loginForm(request, reply, 401, 'Email or password is incorrect.', email);
    }
    const { clock, config } = this.runtime.services;
    await startSession({ em: this.runtime.em, clock }, config.authSessionTtlMs, user, reply, this.security);
    return reply.code(303).header('location', safeReturnTo(body.return_to)).send();
  }

  async logout(request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
    const signedIn = await this.signedIn(request);
    if (signedIn && sessionCsrfValid(signedIn, (request.body as Body | undefined)?.csrf)) {
      await endSession(this.runtime.em, request, reply, this.security);
    }
    return reply.code(303).header('location', '/console/login').send();
  }

  private signedIn(request: FastifyRequest): Promise<SignedIn | null> {
    return currentSession({ em: this.runtime.em, clock: this.runtime.services.clock }, request);
  }

  /** Every signed-in action: a session, and for posts the session's CSRF token. */
  private async guard(request: FastifyRequest, reply: FastifyReply): Promise<SignedIn | null> {
    const signedIn = await this.signedIn(request);
    if (!signedIn) {
      reply
        .code(303)
        .header('location', `/console/login?return_to=${encodeURIComponent('/console')}`)
        .send();
      return null;
    }
    if (request.method === 'POST' && !sessionCsrfValid(signedIn, (request.body as Body | undefined)?.csrf)) {
      errorPage(
        reply,
        403,
        'Request expired',
        'The form was not valid (missing or wrong CSRF token). Reload the console and try again.',
      );
      return null;
    }
    return signedIn;
  }

  async dashboard(
    request: FastifyRequest,
    reply: FastifyReply,
    status = 200,
    error?: string,
  ): Promise<FastifyReply | void> {
    const signedIn = await this.guard(request, reply);
    if (!signedIn) return;
    const em = this.runtime.em;
    const accountId = signedIn.user.account.id;
    const [clients, keys, usage] = await Promise.all([
      listClients(em, accountId),
      listApiKeys(em, accountId),
      this.usageThisMonth(em, accountId),
    ]);
    const csrf = signedIn.session.csrfToken;
    const now = this.runtime.services.clock.now();
    const grantableScopes = ALL_SCOPES.filter((s) => s !== 'admin' || signedIn.user.roles.includes('admin'));
    return sendPage(
      reply,
      status,
      'Console',
      html`${consoleNav('/console')}
        <section class="card">
          <h1>${signedIn.user.account.name}</h1>
          <p>
            Signed in as <strong>${signedIn.user.email}</strong>. Plan:
            <strong id="plan">${planLabel(signedIn.user.account.plan)}</strong>. API calls this month:
            <strong id="usage">${usage}</strong>.
          </p>
          <form method="post" action="/console/logout">
            ${hidden('csrf', csrf)}<button type="submit" class="secondary">Sign out</button>
          </form>
        </section>
        ${error ? html`<p class="card error" role="alert" id="error">${error}</p>` : ''}
        <section class="card" id="clients">
          <h2>OAuth applications</h2>
          ${clients.length === 0 ? html`<p class="muted">No applications yet.</p>` : clientTable(clients, csrf)}
          <h2>Register an application</h2>
          <form method="post" action="/console/clients" id="register-client">
            ${hidden('csrf', csrf)}
            <label for="client-name">Name</label
            ><input type="text" id="client-name" name="name" required maxlength="200" />
            <label for="redirect-uris">Redirect URIs (one per line, exact match)</label
            ><textarea id="redirect-uris" name="redirect_uris" rows="3"></textarea>
            <fieldset>
              <legend>Allowed scopes</legend>
              ${scopeBoxes('scopes', grantableScopes)}
            </fieldset>
            <fieldset>
              <legend>Grant types</legend>
              ${GRANT_TYPES.map(
                (g) =>
                  html`<label
                    ><input
                      type="checkbox"
                      name="grant_types"
                      value="${g}"
                      ${g !== 'client_credentials' ? html` checked` : ''}
                    />
                    ${g}</label
                  >`,
              )}
            </fieldset>
            <fieldset>
              <legend>Client type</legend>
              <label
                ><input type="radio" name="client_type" value="confidential" checked /> Confidential
                (server-side; gets a secret)</label
              >
              <label
                ><input type="radio" name="client_type" value="public" /> Public (browser or mobile; PKCE, no
                secret)</label
              >
            </fieldset>
            <div class="actions"><button type="submit" id="register">Register</button></div>
          </form>
        </section>
        <section class="card" id="api-keys">
          <h2>API keys</h2>
          ${keys.length === 0 ? html`<p class="muted">No API keys yet.</p>` : keyTable(keys, csrf, now)}
          <h2>Create an API key</h2>
          <form method="post" action="/console/keys" id="create-key">
            ${hidden('csrf', csrf)}
            <label for="key-name">Name</label
            ><input type="text" id="key-name" name="name" required maxlength="200" />
            <fieldset>
              <legend>Scopes (a new key gets every scope but admin unless you narrow it)</legend>
              ${scopeBoxes('scopes', grantableScopes, DEFAULT_KEY_SCOPES)}
            </fieldset>
            <div class="actions"><button type="submit" id="create-key-button">Create key</button></div>
          </form>
        </section>`,
    );
  }

  /** Audit rows of this calendar month (UTC): every API call the account made, whatever the credential. */
  private usageThisMonth(em: EntityManager, accountId: string): Promise<number> {
    const now = this.runtime.services.clock.now();
    const start = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1));
    const end = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1));
    return em.count(AuditRecord, { accountId, at: { $gte: start, $lt: end } });
  }

  /** Runs a console action; bad input re-renders the console with the message (400/404/409). */
  private async act(
    request: FastifyRequest,
    reply: FastifyReply,
    action: (signedIn: SignedIn, body: Body) => Promise<FastifyReply>,
  ): Promise<FastifyReply | void> {
    const signedIn = await this.guard(request, reply);
    if (!signedIn) return;
    try {
      return await action(signedIn, (request.body ?? {}) as Body);
    } catch (e) {
      if (e instanceof AppError && e.status < 500) return this.dashboard(request, reply, e.status, e.message);
      throw e;
    }
  }

  /**
   * Post/Redirect/Get for secrets: the POST keeps the page in the session (sealed) and redirects;
   * the GET shows it once. Reloading the GET, or Back, finds nothing: a refresh can neither
   * re-submit the form (a second client or key) nor show the secret again.
   */
  private async showOnce(session: AuthSession, reply: FastifyReply, page: ShownOnce): Promise<FastifyReply> {
    const { clock, secrets } = this.runtime.services;
    await setFlash({ em: this.runtime.em, clock }, secrets, session, page);
    return reply.code(303).header('location', SHOWN_ONCE_PATH).send();
  }

  async shownOncePage(request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply | void> {
    const signedIn = await this.guard(request, reply);
    if (!signedIn) return;
    const { clock, secrets } = this.runtime.services;
    const page = await takeFlash<ShownOnce>(this.runtime.em, clock, secrets, signedIn.session);
    if (!page) {
      return sendPage(
        reply,
        410,
        'No longer available',
        html`<section class="card shown-once">
          <h1>No longer available</h1>
          <p class="warning" role="alert" id="gone">
            A secret is shown only once, and this one has already been shown. If it was not saved, rotate it
            from the console.
          </p>
          <p><a href="/console">Back to the console</a></p>
        </section>`,
      );
    }
    return shownOnce(reply, page);
  }

  registerClient(request: FastifyRequest, reply: FastifyReply) {
    return this.act(request, reply, async ({ user, session }, body) => {
      const { client, secret } = await createClient(
        { em: this.runtime.em, clock: this.runtime.services.clock },
        user,
        {
          accountId: user.account.id,
          name: text(body.name),
          redirectUris: text(body.redirect_uris)
            .split(/\r?\n/)
            .map((u) => u.trim())
            .filter(Boolean),
          scopes: consoleScopes(user, list(body.scopes)),
          grantTypes: list(body.grant_types),
          confidential: text(body.client_type) !== 'public',
        },
      );
      return this.showOnce(session, reply, {
        title: 'Application registered',
        values: [
          ['Client ID', 'client-id', client.clientId],
          ...(secret ? [['Client secret', 'client-secret', secret] as const] : []),
        ],
        warning: secret
          ? 'Copy the client secret now. It is shown only this once and cannot be retrieved later; if you lose it, rotate it.'
          : 'This is a public client: it has no secret and must use PKCE.',
      });
    });
  }

  rotateClient(request: FastifyRequest, reply: FastifyReply) {
    return this.act(request, reply, async ({ user, session }) => {
      const { client, secret } = await rotateClientSecret(
        this.runtime.em,
        clientIdParam(request),
        user.account.id,
      );
      return this.showOnce(session, reply, {
        title: 'Client secret rotated',
        values: [
          ['Client ID', 'client-id', client.clientId],
          ['New client secret', 'client-secret', secret],
        ],
        warning: 'The old secret stopped working now. Copy the new one: it is shown only this once.',
      });
    });
  }

  deleteClient(request: FastifyRequest, reply: FastifyReply) {
    return this.act(request, reply, async ({ user }) => {
      const client = await getClient(this.runtime.em, clientIdParam(request), user.account.id);
      await this.runtime.applyRevocation(await deleteClient(this.runtime.em, this.runtime.services, client));
      return reply.code(303).header('location', '/console').send();
    });
  }

  createKey(request: FastifyRequest, reply: FastifyReply) {
    return this.act(request, reply, async ({ user, session }, body) => {
      const { key, secret } = await createApiKey(
        { em: this.runtime.em, clock: this.runtime.services.clock },
        this.keyPolicy,
        {
          accountId: user.account.id,
          name: text(body.name),
          scopes: consoleScopes(user, list(body.scopes)),
        },
      );
      return this.showOnce(session, reply, {
        title: 'API key created',
        values: [['API key', 'api-key', secret]],
        warning: `Key "${key.name}" created. Copy it now: it is shown only this once.`,
      });
    });
  }

  rotateKey(request: FastifyRequest, reply: FastifyReply) {
    return this.act(request, reply, async ({ user, session }) => {
      const { secret, previous } = await rotateApiKey(
        { em: this.runtime.em, clock: this.runtime.services.clock },
        this.keyPolicy,
        keyIdParam(request),
        user.account.id,
      );
      return this.showOnce(session, reply, {
        title: 'API key rotated',
        values: [['New API key', 'api-key', secret]],
        warning: `The old key keeps working until ${previous.expiresAt?.toISOString()}. Copy the new key now: it is shown only this once.`,
      });
    });
  }

  revokeKey(request: FastifyRequest, reply: FastifyReply) {
    return this.act(request, reply, async ({ user }) => {
      const { clock, credentials, events } = this.runtime.services;
      const id = keyIdParam(request);
      const staged = await this.runtime.em.transactional(async (tx) => {
        const key = await revokeApiKey({ em: tx, clock }, id, user.account.id);
        return stageEvents(tx, { clock, events }, [
          { type: 'credential.revoked', accountId: key.account.id, payload: { credentialId: key.id } },
        ]);
      });
      credentials.invalidateKey(id);
      await events.publish(staged);
      return reply.code(303).header('location', '/console').send();
    });
  }
}

/** Which scopes a console user may hand out: everything, and admin only with the admin role. */
function consoleScopes(user: User, scopes: string[]): string[] {
  if (scopes.includes('admin') && !user.roles.includes('admin')) {
    throw new AppError('BAD_USER_INPUT', 'scopes: admin may only be granted by a user with the admin role', {
      field: 'scopes',
    });
  }
  return scopes;
}

const clientIdParam = (request: FastifyRequest): string => (request.params as { clientId: string }).clientId;
const keyIdParam = (request: FastifyRequest): string => (request.params as { id: string }).id;

function scopeBoxes(name: string, scopes: readonly string[], checked: readonly string[] = []): SafeHtml[] {
  return scopes.map(
    (s) =>
      html`<label title="${SCOPES[s as keyof typeof SCOPES]}"
        ><input type="checkbox" name="${name}" value="${s}" ${checked.includes(s) ? html`checked` : ''} />
        ${s}</label
      >`,
  );
}

function clientTable(clients: OAuthClient[], csrf: string): SafeHtml {
  return html`<table>
    <thead>
      <tr>
        <th>Name</th>
        <th>Client ID</th>
        <th>Type</th>
        <th>Grants</th>
        <th>Scopes</th>
        <th>Redirect URIs</th>
        <th></th>
      </tr>
    </thead>
    <tbody>
      ${clients.map(
        (c) =>
          html`<tr data-client-id="${c.clientId}">
            <td>${c.name}</td>
            <td><code>${c.clientId}</code></td>
            <td>${c.confidential ? 'confidential' : 'public'}</td>
            <td>${c.grantTypes.join(', ')}</td>
            <td>${c.scopes.join(' ')}</td>
            <td>${c.redirectUris.map((u) => html`<code>${u}</code><br />`)}</td>
            <td>
              ${c.confidential ? html`<form method="post" action="/console/clients/${c.clientId}/rotate-secret">${hidden('csrf', csrf)}<button type="submit" class="secondary">Rotate secret</button></form>` : ''}
              <form method="post" action="/console/clients/${c.clientId}/delete">
                ${hidden('csrf', csrf)}<button type="submit" class="danger">Delete</button>
              </form>
            </td>
          </tr>`,
      )}
    </tbody>
  </table>`;
}

function keyTable(keys: ApiKey[], csrf: string, now: Date): SafeHtml {
  return html`<table>
    <thead>
      <tr>
        <th>Name</th>
        <th>Prefix</th>
        <th>Scopes</th>
        <th>Created</th>
        <th>Last used</th>
        <th>Status</th>
        <th></th>
      </tr>
    </thead>
    <tbody>
      ${keys.map((k) => {
        const active = isKeyActive(k, now);
        return html`<tr data-key-id="${k.id}">
          <td>${k.name}</td>
          <td><code>${k.prefix}…</code></td>
          <td>
            <details class="scopes">
              <summary>${k.scopes.length} scopes</summary>
              ${k.scopes.map((s) => html`<code>${s}</code> `)}
            </details>
          </td>
          <td>${k.createdAt.toISOString()}</td>
          <td>${k.lastUsedAt?.toISOString() ?? 'never'}</td>
          <td>
            ${k.revokedAt ? 'revoked' : active ? (k.expiresAt ? `expires ${k.expiresAt.toISOString()}` : 'active') : 'expired'}
          </td>
          <td>
            ${
              active
                ? html`<form method="post" action="/console/keys/${k.id}/rotate">
                      ${hidden('csrf', csrf)}<button type="submit" class="secondary">Rotate</button>
                    </form>
                    <form method="post" action="/console/keys/${k.id}/revoke">
                      ${hidden('csrf', csrf)}<button type="submit" class="danger">Revoke</button>
                    </form>`
                : ''
            }
          </td>
        </tr>`;
      })}
    </tbody>
  </table>`;
}

/** What the page after a console action shows once: values as [label, element id, value]. */
interface ShownOnce {
  title: string;
  values: ReadonlyArray<readonly [string, string, string]>;
  warning: string;
}

export const SHOWN_ONCE_PATH = '/console/shown-once';

/** The one page that ever shows a secret; never cached, never shown again. */
function shownOnce(reply: FastifyReply, { title, values, warning }: ShownOnce): FastifyReply {
  return sendPage(
    reply,
    200,
    title,
    html`<section class="card shown-once">
      <h1>${title}</h1>
      <p class="warning" role="alert">${warning}</p>
      ${values.map(([label, id, value]) => html`<label>${label}</label><code class="secret" id="${id}">${value}</code><button type="button" class="secondary" data-copy="${id}">Copy</button>`)}
      <p><a href="/console">Back to the console</a></p>
    </section>`,
  );
}
