import type { FastifyReply, FastifyRequest } from 'fastify';
import type { EntityManager } from '@mikro-orm/knex';
import { verifyUserPassword } from '../accounts/service.js';
import { AuditRecord } from '../audit/entities.js';
import { AppError } from '../kernel/errors.js';
import { planLabel } from '../kernel/plans.js';
import { ALL_SCOPES, DEFAULT_KEY_SCOPES, SCOPES, SESSION_ONLY_SCOPES } from '../kernel/scopes.js';
import type {
  ConsoleAppFragment,
  ConsoleCreateKeyMutation,
  ConsoleCreateKeyMutationVariables,
  ConsoleRegisterAppMutation,
  ConsoleRegisterAppMutationVariables,
  ConsoleRotateKeyMutation,
  ConsoleConnectedAppsQuery,
  ConsoleKeyFragment,
  ConsoleKeysAndAppsQuery,
  ConsoleRevokeConnectedAppMutation,
  ConsoleRotateAppSecretMutation,
} from '../generated/graphql.js';
import { GRANT_TYPES } from './clients.js';
import type { AuthSession } from './entities.js';
import { ConsoleGateway } from './console-gateway.js';
import { ConsoleReports } from './console-reports.js';
import { ConsoleWebhooks } from './console-webhooks.js';
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
  /** The Webhooks pages: both doors' endpoints, deliveries and their actions. */
  readonly webhooks: ConsoleWebhooks;

  constructor(
    private readonly runtime: AuthRuntime,
    private readonly gateway: ConsoleGateway,
  ) {
    const guard = (request: FastifyRequest, reply: FastifyReply) => this.guard(request, reply);
    this.reports = new ConsoleReports(gateway, guard);
    this.webhooks = new ConsoleWebhooks(gateway, guard, (signedIn, reply, page) =>
      this.showOnce(signedIn.session, reply, page),
    );
  }

  private get security() {
    return { secure: this.runtime.services.config.publicUrl.startsWith('https:') };
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
    const [{ apiKeys: keys, sandboxKeys, oauthApps: clients }, usage] = await Promise.all([
      this.gateway.run<ConsoleKeysAndAppsQuery>('ConsoleKeysAndApps', signedIn, request),
      this.usageThisMonth(em, accountId),
    ]);
    const csrf = signedIn.session.csrfToken;
    const grantableScopes = ALL_SCOPES.filter(
      (s) => !SESSION_ONLY_SCOPES.includes(s) && (s !== 'admin' || signedIn.user.roles.includes('admin')),
    );
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
          ${
            clients.length === 0
              ? html`<p class="empty" id="clients-empty">
                  No applications yet. Register one below to let an app act for your users through OAuth.
                </p>`
              : clientTable(clients, csrf)
          }
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
          ${
            keys.length === 0
              ? html`<p class="empty" id="keys-empty">
                  No API keys yet. Create one below, then send it in the <code>X-API-Key</code> header.
                </p>`
              : keyTable(keys, csrf)
          }
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
        </section>
        <section class="card" id="sandbox-keys">
          <h2>Sandbox keys</h2>
          ${
            sandboxKeys.length === 0
              ? html`<p class="empty" id="sandbox-empty">
                  No sandbox keys. Generate one in the <a href="/playground">playground</a>: it reaches demo
                  data only and expires by itself.
                </p>`
              : sandboxTable(sandboxKeys, csrf)
          }
        </section>`,
    );
  }

  /** Audit rows of this calendar month (UTC): every API call the account made, whatever the credential. */
  private usageThisMonth(em: EntityManager, accountId: string): Promise<number> {
    const now = this.runtime.services.clock.now();
    const start = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1));
    const end = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1));
    // The console's own reads (door `console`, one per page view) are not the account's API calls:
    // counting them would make the figure grow with every reload of this page.
    return em.count(AuditRecord, {
      accountId,
      at: { $gte: start, $lt: end },
      $or: [{ door: null }, { door: { $ne: 'console' } }],
    });
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

  /** One of the schema's write operations for the dashboard; a refusal re-renders it with the message. */
  private runAction(name: string, variables: Record<string, unknown>) {
    return (request: FastifyRequest, reply: FastifyReply) =>
      this.act(request, reply, async (signedIn) => {
        await this.gateway.run(name, signedIn, request, variables);
        return reply.code(303).header('location', '/console').send();
      });
  }

  registerClient(request: FastifyRequest, reply: FastifyReply) {
    return this.act(request, reply, async (signedIn, body) => {
      const { registerOAuthApp: registered } = await this.gateway.run<
        ConsoleRegisterAppMutation,
        ConsoleRegisterAppMutationVariables
      >('ConsoleRegisterApp', signedIn, request, {
        input: {
          name: text(body.name),
          redirectUris: text(body.redirect_uris)
            .split(/\r?\n/)
            .map((u) => u.trim())
            .filter(Boolean),
          scopes: list(body.scopes),
          grantTypes: list(body.grant_types),
          confidential: text(body.client_type) !== 'public',
        },
      });
      const secret = registered.app.confidential ? registered.clientSecret : null;
      return this.showOnce(signedIn.session, reply, {
        title: 'Application registered',
        values: [
          ['Client ID', 'client-id', registered.app.clientId],
          ...(secret ? [['Client secret', 'client-secret', secret] as const] : []),
        ],
        warning: secret
          ? 'Copy the client secret now. It is shown only this once and cannot be retrieved later; if you lose it, rotate it.'
          : 'This is a public client: it has no secret and must use PKCE.',
      });
    });
  }

  rotateClient(request: FastifyRequest, reply: FastifyReply) {
    return this.act(request, reply, async (signedIn) => {
      const { rotateOAuthAppSecret: rotated } = await this.gateway.run<
        ConsoleRotateAppSecretMutation,
        { clientId: string }
      >('ConsoleRotateAppSecret', signedIn, request, { clientId: clientIdParam(request) });
      return this.showOnce(signedIn.session, reply, {
        title: 'Client secret rotated',
        values: [
          ['Client ID', 'client-id', rotated.app.clientId],
          ['New client secret', 'client-secret', rotated.clientSecret],
        ],
        warning: 'The old secret stopped working now. Copy the new one: it is shown only this once.',
      });
    });
  }

  /** Replaces an app's redirect URIs (one per line), checked by the schema like a registration. */
  updateRedirectUris(request: FastifyRequest, reply: FastifyReply) {
    const redirectUris = text(((request.body ?? {}) as Body).redirect_uris)
      .split(/\r?\n/)
      .map((u) => u.trim())
      .filter(Boolean);
    return this.runAction('ConsoleUpdateRedirectUris', { clientId: clientIdParam(request), redirectUris })(
      request,
      reply,
    );
  }

  revokeSandboxKey(request: FastifyRequest, reply: FastifyReply) {
    return this.runAction('ConsoleRevokeSandboxKey', { id: keyIdParam(request) })(request, reply);
  }

  /** Connected apps: the apps holding the signed-in user's tokens, each with a revoke button. */
  async connectedApps(
    request: FastifyRequest,
    reply: FastifyReply,
    status = 200,
    message?: { error?: string; notice?: string },
  ): Promise<FastifyReply | void> {
    const signedIn = await this.guard(request, reply);
    if (!signedIn) return;
    return this.connectedAppsPage(signedIn, request, reply, status, message);
  }

  private async connectedAppsPage(
    signedIn: SignedIn,
    request: FastifyRequest,
    reply: FastifyReply,
    status = 200,
    message: { error?: string; notice?: string } = {},
  ): Promise<FastifyReply> {
    const { connectedApps: apps } = await this.gateway.run<ConsoleConnectedAppsQuery>(
      'ConsoleConnectedApps',
      signedIn,
      request,
    );
    const revoked = text((request.query as Record<string, unknown>).revoked);
    const notice = message.notice ?? (revoked ? `Access of ${revoked} revoked.` : undefined);
    const csrf = signedIn.session.csrfToken;
    return sendPage(
      reply,
      status,
      'Connected apps',
      html`${consoleNav('/console/apps')}
        <section class="card" id="connected-apps">
          <h1>Connected apps</h1>
          <p class="muted">
            Applications you signed in to with tidegate that still hold your tokens. Revoking one ends its
            access at once: its tokens stop working and its live connections close.
          </p>
          ${message.error ? html`<p class="error" role="alert" id="error">${message.error}</p>` : ''}
          ${notice ? html`<p class="notice" role="status" id="notice">${notice}</p>` : ''}
          ${
            apps.length === 0
              ? html`<p class="empty" id="apps-empty">
                  No app holds your tokens. When you approve an app's request on the consent page, it appears
                  here with what you granted it.
                </p>`
              : html`<table id="apps">
                  <thead>
                    <tr>
                      <th scope="col">App</th>
                      <th scope="col">Scopes</th>
                      <th scope="col">Granted (UTC)</th>
                      <th scope="col">Last used (UTC)</th>
                      <th scope="col"></th>
                    </tr>
                  </thead>
                  <tbody>
                    ${apps.map(
                      (a) =>
                        html`<tr data-client-id="${a.clientId}">
                          <td>${a.name}<br /><code class="muted">${a.clientId}</code></td>
                          <td>${a.scopes.map((s) => html`<code>${s}</code> `)}</td>
                          <td>${a.grantedAt}</td>
                          <td>${a.lastUsedAt ?? 'never'}</td>
                          <td>
                            <form method="post" action="/console/apps/${a.clientId}/revoke">
                              ${hidden('csrf', csrf)}<button type="submit" class="danger revoke-app">
                                Revoke access
                              </button>
                            </form>
                          </td>
                        </tr>`,
                    )}
                  </tbody>
                </table>`
          }
        </section>`,
    );
  }

  async revokeConnectedApp(request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply | void> {
    const signedIn = await this.guard(request, reply);
    if (!signedIn) return;
    try {
      const { revokeConnectedApp: done } = await this.gateway.run<
        ConsoleRevokeConnectedAppMutation,
        { clientId: string }
      >('ConsoleRevokeConnectedApp', signedIn, request, { clientId: clientIdParam(request) });
      return reply
        .code(303)
        .header('location', `/console/apps?revoked=${encodeURIComponent(done.clientId)}`)
        .send();
    } catch (e) {
      if (!(e instanceof AppError) || e.status >= 500) throw e;
      return this.connectedAppsPage(signedIn, request, reply, e.status, { error: e.message });
    }
  }

  deleteClient(request: FastifyRequest, reply: FastifyReply) {
    return this.runAction('ConsoleDeleteApp', { clientId: clientIdParam(request) })(request, reply);
  }

  createKey(request: FastifyRequest, reply: FastifyReply) {
    return this.act(request, reply, async (signedIn, body) => {
      const { createApiKey: created } = await this.gateway.run<
        ConsoleCreateKeyMutation,
        ConsoleCreateKeyMutationVariables
      >('ConsoleCreateKey', signedIn, request, {
        input: { name: text(body.name), scopes: list(body.scopes) },
      });
      return this.showOnce(signedIn.session, reply, {
        title: 'API key created',
        values: [['API key', 'api-key', created.secret]],
        warning: `Key "${created.key.name}" created. Copy it now: it is shown only this once.`,
      });
    });
  }

  rotateKey(request: FastifyRequest, reply: FastifyReply) {
    return this.act(request, reply, async (signedIn) => {
      const { rotateApiKey: rotated } = await this.gateway.run<ConsoleRotateKeyMutation, { id: string }>(
        'ConsoleRotateKey',
        signedIn,
        request,
        { id: keyIdParam(request) },
      );
      return this.showOnce(signedIn.session, reply, {
        title: 'API key rotated',
        values: [['New API key', 'api-key', rotated.secret]],
        warning: `The old key keeps working until ${rotated.previousExpiresAt}. Copy the new key now: it is shown only this once.`,
      });
    });
  }

  revokeKey(request: FastifyRequest, reply: FastifyReply) {
    return this.runAction('ConsoleRevokeKey', { id: keyIdParam(request) })(request, reply);
  }
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

function clientTable(clients: ConsoleAppFragment[], csrf: string): SafeHtml {
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
            <td>
              <details class="redirect-uris">
                <summary>
                  ${c.redirectUris.map((u) => html`<code>${u}</code><br />`)}${c.redirectUris.length === 0 ? 'none' : ''}
                </summary>
                <form
                  method="post"
                  action="/console/clients/${c.clientId}/redirect-uris"
                  class="edit-redirect-uris"
                >
                  ${hidden('csrf', csrf)}
                  <label for="redirect-uris-${c.clientId}">Redirect URIs (one per line, exact match)</label
                  ><textarea id="redirect-uris-${c.clientId}" name="redirect_uris" rows="3">
${c.redirectUris.join('\n')}</textarea>
                  <button type="submit" class="secondary">Save redirect URIs</button>
                </form>
              </details>
            </td>
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

function keyStatus(k: ConsoleKeyFragment): string {
  if (k.revokedAt) return `revoked ${k.revokedAt}`;
  if (!k.active) return `expired ${k.expiresAt ?? ''}`;
  return k.expiresAt ? `expires ${k.expiresAt}` : 'active';
}

const scopeList = (scopes: readonly string[]): SafeHtml =>
  html`<details class="scopes">
    <summary>${scopes.length} scopes</summary>
    ${scopes.map((s) => html`<code>${s}</code> `)}
  </details>`;

function keyTable(keys: ConsoleKeyFragment[], csrf: string): SafeHtml {
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
      ${keys.map(
        (k) =>
          html`<tr data-key-id="${k.id}">
            <td>${k.name}</td>
            <td><code>${k.prefix}…</code></td>
            <td>${scopeList(k.scopes)}</td>
            <td>${k.createdAt}</td>
            <td>${k.lastUsedAt ?? 'never'}</td>
            <td>${keyStatus(k)}</td>
            <td>
              ${
                k.active
                  ? html`<form method="post" action="/console/keys/${k.id}/rotate">
                        ${hidden('csrf', csrf)}<button type="submit" class="secondary">Rotate</button>
                      </form>
                      <form method="post" action="/console/keys/${k.id}/revoke">
                        ${hidden('csrf', csrf)}<button type="submit" class="danger">Revoke</button>
                      </form>`
                  : ''
              }
            </td>
          </tr>`,
      )}
    </tbody>
  </table>`;
}

function sandboxTable(keys: ConsoleKeyFragment[], csrf: string): SafeHtml {
  return html`<table id="sandbox-key-list">
    <thead>
      <tr>
        <th>Prefix</th>
        <th>Scopes</th>
        <th>Created</th>
        <th>Last used</th>
        <th>Status</th>
        <th></th>
      </tr>
    </thead>
    <tbody>
      ${keys.map(
        (k) =>
          html`<tr data-key-id="${k.id}">
            <td><code>${k.prefix}…</code></td>
            <td>${scopeList(k.scopes)}</td>
            <td>${k.createdAt}</td>
            <td>${k.lastUsedAt ?? 'never'}</td>
            <td class="key-status">${keyStatus(k)}</td>
            <td>
              ${
                k.active
                  ? html`<form method="post" action="/console/sandbox-keys/${k.id}/revoke">
                      ${hidden('csrf', csrf)}<button type="submit" class="danger revoke-sandbox">
                        Revoke
                      </button>
                    </form>`
                  : ''
              }
            </td>
          </tr>`,
      )}
    </tbody>
  </table>`;
}

/** What the page after a console action shows once: values as [label, element id, value]. */
interface ShownOnce {
  title: string;
  values: ReadonlyArray<readonly [string, string, string]>;
  warning: string;
  /** Where the page links back to (the console's first page unless given). */
  back?: string;
}

export const SHOWN_ONCE_PATH = '/console/shown-once';

/** The one page that ever shows a secret; never cached, never shown again. */
function shownOnce(reply: FastifyReply, { title, values, warning, back }: ShownOnce): FastifyReply {
  return sendPage(
    reply,
    200,
    title,
    html`<section class="card shown-once">
      <h1>${title}</h1>
      <p class="warning" role="alert">${warning}</p>
      ${values.map(([label, id, value]) => html`<label>${label}</label><code class="secret" id="${id}">${value}</code><button type="button" class="secondary" data-copy="${id}">Copy</button>`)}
      <p><a href="${back ?? '/console'}" id="back">Back to the console</a></p>
    </section>`,
  );
}
