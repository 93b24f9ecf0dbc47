import type { FastifyReply, FastifyRequest } from 'fastify';
import type {
  ConsoleDeliveryFragment,
  ConsoleEndpointFragment,
  ConsoleLiquidityEndpointQuery,
  ConsoleLiquidityEndpointsQuery,
  ConsoleLiquidityRotateMutation,
  ConsolePortOpsEndpointQuery,
  ConsolePortOpsEndpointsQuery,
  ConsolePortOpsRotateMutation,
} from '../generated/graphql.js';
import { AppError } from '../kernel/errors.js';
import type { ConsoleGateway } from './console-gateway.js';
import { consoleNav, hidden, html, sendPage, type SafeHtml } from './html.js';
import type { SignedIn } from './sessions.js';

/** The two webhook doors as the console's URLs name them. */
const DOORS = {
  'port-ops': {
    title: 'Port-operations webhook subscriptions',
    prefix: 'ConsolePortOps',
    register: 'POST /v1/webhook-subscriptions or the createWebhookSubscription mutation',
  },
  liquidity: {
    title: 'Liquidity webhook endpoints',
    prefix: 'ConsoleLiquidity',
    register: 'POST /v1/webhooks or the registerWebhook mutation (Professional plan)',
  },
} as const;
type Door = keyof typeof DOORS;

/** What a finished action says on the endpoint page it returns to. */
const NOTICES: Record<string, string> = {
  resent: 'Delivery queued again: the new attempt appears below within seconds (reload).',
  tested: 'Test event queued: its delivery appears below within seconds (reload).',
  enabled: 'Endpoint enabled: its pending deliveries resume.',
};

type Params = { door: string; id: string; deliveryId?: string };

/** Deliveries shown on an endpoint's page, newest first. */
const DELIVERIES_SHOWN = 25;

/**
 * The console's Webhooks pages: every endpoint of both doors with its state, and per endpoint its
 * deliveries with every attempt and the actions (resend, test event, re-enable, rotate secret).
 * Reads and writes only through the named operations of schema/operations/console/webhooks.graphql.
 */
export class ConsoleWebhooks {
  constructor(
    private readonly gateway: ConsoleGateway,
    private readonly guard: (request: FastifyRequest, reply: FastifyReply) => Promise<SignedIn | null>,
    private readonly showOnce: (
      signedIn: SignedIn,
      reply: FastifyReply,
      page: { title: string; values: Array<[string, string, string]>; warning: string; back: string },
    ) => Promise<FastifyReply>,
  ) {}

  async list(request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply | void> {
    const signedIn = await this.guard(request, reply);
    if (!signedIn) return;
    const sections = await Promise.all(
      (Object.keys(DOORS) as Door[]).map(async (door) => {
        try {
          const data =
            door === 'port-ops'
              ? (
                  await this.gateway.run<ConsolePortOpsEndpointsQuery>(
                    'ConsolePortOpsEndpoints',
                    signedIn,
                    request,
                  )
                ).webhookSubscriptions.nodes
              : (
                  await this.gateway.run<ConsoleLiquidityEndpointsQuery>(
                    'ConsoleLiquidityEndpoints',
                    signedIn,
                    request,
                  )
                ).webhooks.nodes;
          return endpointTable(door, data);
        } catch (e) {
          if (!(e instanceof AppError) || e.status >= 500) throw e;
          return html`<section class="card" id="door-${door}">
            <h2>${DOORS[door].title}</h2>
            <p class="muted" id="door-${door}-refused">${e.message}</p>
          </section>`;
        }
      }),
    );
    return sendPage(
      reply,
      200,
      'Webhooks',
      html`${consoleNav('/console/webhooks')}
        <section class="card">
          <h1>Webhooks</h1>
          <p class="muted">
            Every endpoint of your account on both doors. Open one to see its deliveries with every attempt,
            resend a delivery, send a test event, re-enable it or rotate its signing secret.
          </p>
        </section>
        ${sections}`,
    );
  }

  async endpoint(request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply | void> {
    const signedIn = await this.guard(request, reply);
    if (!signedIn) return;
    const { door, id } = request.params as Params;
    if (!isDoor(door)) return this.notFoundPage(reply, `No webhook door '${door}' (port-ops or liquidity)`);
    return this.endpointPage(signedIn, request, reply, door, id);
  }

  /** One endpoint with its deliveries; after a refused action, with the refusal's message and status. */
  private async endpointPage(
    signedIn: SignedIn,
    request: FastifyRequest,
    reply: FastifyReply,
    door: Door,
    id: string,
    status = 200,
    error?: string,
  ): Promise<FastifyReply> {
    let endpoint: ConsoleEndpointFragment;
    let deliveries: { totalCount: number; nodes: ConsoleDeliveryFragment[] };
    try {
      if (door === 'port-ops') {
        const data = await this.gateway.run<ConsolePortOpsEndpointQuery, { id: string; first: number }>(
          'ConsolePortOpsEndpoint',
          signedIn,
          request,
          { id, first: DELIVERIES_SHOWN },
        );
        endpoint = data.webhookSubscription;
        deliveries = data.webhookSubscriptionDeliveries;
      } else {
        const data = await this.gateway.run<ConsoleLiquidityEndpointQuery, { id: string; first: number }>(
          'ConsoleLiquidityEndpoint',
          signedIn,
          request,
          { id, first: DELIVERIES_SHOWN },
        );
        endpoint = data.webhook;
        deliveries = data.webhookDeliveries;
      }
    } catch (e) {
      if (!(e instanceof AppError) || e.status >= 500) throw e;
      return this.notFoundPage(reply, e.message, e.status);
    }
    const notice = NOTICES[String((request.query as Record<string, unknown>).done ?? '')];
    const csrf = signedIn.session.csrfToken;
    const base = `/console/webhooks/${door}/${endpoint.id}`;
    return sendPage(
      reply,
      status,
      'Webhook endpoint',
      html`${consoleNav('/console/webhooks')}
        <section class="card" id="endpoint" data-endpoint-id="${endpoint.id}">
          <h1>${DOORS[door].title.replace(/s$/, '')}</h1>
          ${error ? html`<p class="error" role="alert" id="error">${error}</p>` : ''}
          ${notice && !error ? html`<p class="notice" role="status" id="notice">${notice}</p>` : ''}
          <dl class="figures">
            <dt>URL</dt>
            <dd id="endpoint-url"><code>${endpoint.url}</code></dd>
            <dt>State</dt>
            <dd id="endpoint-state">${stateOf(endpoint)}</dd>
            <dt>Event types</dt>
            <dd>${endpoint.eventTypes.map((t) => html`<code>${t}</code> `)}</dd>
            <dt>Failures since the last success</dt>
            <dd id="endpoint-failures">${endpoint.consecutiveFailures}</dd>
            <dt>Signing secret</dt>
            <dd id="endpoint-secret">
              <code>${endpoint.secretPrefix}…</code>
              ${
                endpoint.previousSecretExpiresAt
                  ? html` — the previous secret still signs too until
                      <span id="previous-secret-expires">${endpoint.previousSecretExpiresAt}</span>`
                  : ''
              }
            </dd>
          </dl>
          <div class="actions">
            ${
              endpoint.status === 'ACTIVE'
                ? html`<form method="post" action="${base}/test">
                    ${hidden('csrf', csrf)}<button type="submit" id="send-test">Send a test event</button>
                  </form>`
                : html`<form method="post" action="${base}/enable">
                    ${hidden('csrf', csrf)}<button type="submit" id="enable">Re-enable</button>
                  </form>`
            }
            <form method="post" action="${base}/rotate-secret">
              ${hidden('csrf', csrf)}<button type="submit" class="secondary" id="rotate-secret">
                Rotate secret
              </button>
            </form>
          </div>
        </section>
        ${deliveryList(base, deliveries, csrf, endpoint.status === 'ACTIVE')}
        <p><a href="/console/webhooks">All webhook endpoints</a></p>`,
    );
  }

  private notFoundPage(reply: FastifyReply, message: string, status = 404): FastifyReply {
    return sendPage(
      reply,
      status,
      'Webhook endpoint',
      html`${consoleNav('/console/webhooks')}
        <section class="card">
          <h1>Webhook endpoint</h1>
          <p class="error" role="alert" id="error">${message}</p>
          <p><a href="/console/webhooks">All webhook endpoints</a></p>
        </section>`,
    );
  }

  /** Runs one action on an endpoint; a refusal re-renders the endpoint page with its message and status. */
  private async act(
    request: FastifyRequest,
    reply: FastifyReply,
    action: (signedIn: SignedIn, door: Door, params: Params) => Promise<FastifyReply | string>,
  ): Promise<FastifyReply | void> {
    const signedIn = await this.guard(request, reply);
    if (!signedIn) return;
    const params = request.params as Params;
    if (!isDoor(params.door))
      return this.notFoundPage(reply, `No webhook door '${params.door}' (port-ops or liquidity)`);
    try {
      const done = await action(signedIn, params.door, params);
      if (typeof done !== 'string') return done;
      return reply
        .code(303)
        .header('location', `/console/webhooks/${params.door}/${encodeURIComponent(params.id)}?done=${done}`)
        .send();
    } catch (e) {
      if (!(e instanceof AppError) || e.status >= 500) throw e;
      return this.endpointPage(signedIn, request, reply, params.door, params.id, e.status, e.message);
    }
  }

  resend(request: FastifyRequest, reply: FastifyReply) {
    return this.act(request, reply, async (signedIn, door, { id, deliveryId }) => {
      await this.gateway.run(`${DOORS[door].prefix}Redeliver`, signedIn, request, {
        endpointId: id,
        deliveryId: deliveryId ?? '',
      });
      return 'resent';
    });
  }

  sendTest(request: FastifyRequest, reply: FastifyReply) {
    return this.act(request, reply, async (signedIn, door, { id }) => {
      await this.gateway.run(`${DOORS[door].prefix}SendTest`, signedIn, request, { id });
      return 'tested';
    });
  }

  enable(request: FastifyRequest, reply: FastifyReply) {
    return this.act(request, reply, async (signedIn, door, { id }) => {
      await this.gateway.run(`${DOORS[door].prefix}Enable`, signedIn, request, { id });
      return 'enabled';
    });
  }

  rotateSecret(request: FastifyRequest, reply: FastifyReply) {
    return this.act(request, reply, async (signedIn, door, { id }) => {
      const rotated =
        door === 'port-ops'
          ? (
              await this.gateway.run<ConsolePortOpsRotateMutation, { id: string }>(
                'ConsolePortOpsRotate',
                signedIn,
                request,
                { id },
              )
            ).rotateWebhookSubscriptionSecret
          : (
              await this.gateway.run<ConsoleLiquidityRotateMutation, { id: string }>(
                'ConsoleLiquidityRotate',
                signedIn,
                request,
                { id },
              )
            ).rotateWebhookSecret;
      return this.showOnce(signedIn, reply, {
        title: 'Signing secret rotated',
        values: [
          ['New signing secret (Tidegate-Signature)', 'webhook-secret', rotated.secret],
          [
            'The same secret for Standard Webhooks libraries',
            'standard-secret',
            rotated.standardWebhooksSecret,
          ],
        ],
        warning: `Copy the new secret now: it is shown only this once. Deliveries are signed with both the old and the new secret until ${rotated.endpoint.previousSecretExpiresAt ?? 'now'}, so switch your receiver before then.`,
        back: `/console/webhooks/${door}/${rotated.endpoint.id}`,
      });
    });
  }
}

const isDoor = (door: string): door is Door => Object.prototype.hasOwnProperty.call(DOORS, door);

/** Active, paused by the account, or disabled by the deliverer with its reason. */
function stateOf(e: ConsoleEndpointFragment): SafeHtml {
  if (e.status === 'ACTIVE') return html`<span class="state active">active</span>`;
  const paused = e.disabledReason?.startsWith('Paused') ?? false;
  return html`<span class="state ${paused ? 'paused' : 'disabled'}">${paused ? 'paused' : 'disabled'}</span>
    ${e.disabledAt ? html` since ${e.disabledAt}` : ''}${
      e.disabledReason ? html`: <span class="reason">${e.disabledReason}</span>` : ''
    }`;
}

function endpointTable(door: Door, endpoints: ConsoleEndpointFragment[]): SafeHtml {
  return html`<section class="card" id="door-${door}">
    <h2>${DOORS[door].title}</h2>
    ${
      endpoints.length === 0
        ? html`<p class="empty" id="door-${door}-empty">
            No endpoints yet. Register one with ${DOORS[door].register}; it appears here with its state and
            deliveries.
          </p>`
        : html`<table>
            <thead>
              <tr>
                <th scope="col">URL</th>
                <th scope="col">Event types</th>
                <th scope="col">State</th>
                <th scope="col">Secret</th>
              </tr>
            </thead>
            <tbody>
              ${endpoints.map(
                (e) =>
                  html`<tr data-endpoint-id="${e.id}">
                    <td>
                      <a href="/console/webhooks/${door}/${e.id}"><code>${e.url}</code></a>
                      ${e.description ? html`<br /><span class="muted">${e.description}</span>` : ''}
                    </td>
                    <td>${e.eventTypes.map((t) => html`<code>${t}</code> `)}</td>
                    <td>${stateOf(e)}</td>
                    <td>
                      <code>${e.secretPrefix}…</code>${
                        e.previousSecretExpiresAt
                          ? html`<br /><span class="muted">previous until ${e.previousSecretExpiresAt}</span>`
                          : ''
                      }
                    </td>
                  </tr>`,
              )}
            </tbody>
          </table>`
    }
  </section>`;
}

function deliveryList(
  base: string,
  deliveries: { totalCount: number; nodes: ConsoleDeliveryFragment[] },
  csrf: string,
  active: boolean,
): SafeHtml {
  if (deliveries.nodes.length === 0) {
    return html`<section class="card">
      <h2>Deliveries</h2>
      <p class="empty" id="deliveries-empty">
        No deliveries yet. Send a test event above to check your receiver and its signature verification;
        events of the subscribed types arrive here as they happen.
      </p>
    </section>`;
  }
  return html`<section class="card">
    <h2>Deliveries</h2>
    <p class="muted">
      The ${deliveries.nodes.length} newest of ${deliveries.totalCount}, each with every attempt (latency from
      the start of the attempt; the response's first bytes).
    </p>
    <table id="deliveries">
      <thead>
        <tr>
          <th scope="col">Created (UTC)</th>
          <th scope="col">Event</th>
          <th scope="col">Status</th>
          <th scope="col">Attempts</th>
          <th scope="col"></th>
        </tr>
      </thead>
      ${deliveries.nodes.map(
        (d) =>
          html`<tbody data-delivery-id="${d.id}" class="delivery ${d.status.toLowerCase()}">
            <tr>
              <td>${d.createdAt}</td>
              <td><code>${d.eventType}</code><br /><span class="muted">${d.eventId}</span></td>
              <td class="delivery-status">
                ${d.status}${d.nextAttemptAt ? html`<br /><span class="muted">next ${d.nextAttemptAt}</span>` : ''}
              </td>
              <td class="delivery-attempts">${d.attempts}</td>
              <td>
                ${
                  active && d.status !== 'PENDING'
                    ? html`<form method="post" action="${base}/deliveries/${d.id}/resend">
                        ${hidden('csrf', csrf)}<button type="submit" class="secondary resend">Resend</button>
                      </form>`
                    : ''
                }
              </td>
            </tr>
            ${d.attemptLog.map(
              (a) =>
                html`<tr class="attempt" data-attempt="${a.attempt}">
                  <td colspan="5">
                    #${a.attempt} at ${a.attemptedAt}:
                    <strong class="attempt-status">${a.statusCode ?? 'no answer'}</strong>
                    in ${a.durationMs} ms${a.error ? html` — ${a.error}` : ''}
                    ${a.responseSnippet ? html`<pre class="snippet">${a.responseSnippet}</pre>` : ''}
                  </td>
                </tr>`,
            )}
          </tbody>`,
      )}
    </table>
  </section>`;
}
