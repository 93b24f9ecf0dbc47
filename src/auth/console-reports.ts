import type { FastifyReply, FastifyRequest } from 'fastify';
import type {
  ConsoleCallFragment,
  ConsoleRequestLogQuery,
  ConsoleRequestLogQueryVariables,
  ConsoleRequestQuery,
  ConsoleRequestQueryVariables,
  ConsoleUsageQuery,
  ConsoleUsageQueryVariables,
} from '../generated/graphql.js';
import { AppError, badInput } from '../kernel/errors.js';
import { planLabel, type Plan } from '../kernel/plans.js';
import { readManifest } from '../kernel/browser-bundle.js';
import type { ConsoleGateway } from './console-gateway.js';
import { consoleNav, html, sendPage, type SafeHtml } from './html.js';
import type { SignedIn } from './sessions.js';

type Query = Record<string, unknown>;
const text = (value: unknown): string => (typeof value === 'string' ? value.trim() : '');
const OUTCOMES = ['SUCCESS', 'CLIENT_ERROR', 'SERVER_ERROR'] as const;
const OUTCOME_LABELS: Record<(typeof OUTCOMES)[number], string> = {
  SUCCESS: 'Succeeded (below 400)',
  CLIENT_ERROR: 'Client errors (4xx)',
  SERVER_ERROR: 'Server errors (5xx)',
};

/**
 * The console's Usage and Request log pages: read through the `usage`, `requestLog` and
 * `requestLogEntry` queries with the session principal, like any other caller of the schema.
 */
export class ConsoleReports {
  constructor(
    private readonly gateway: ConsoleGateway,
    private readonly guard: (request: FastifyRequest, reply: FastifyReply) => Promise<SignedIn | null>,
  ) {}

  async usage(request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply | void> {
    const signedIn = await this.guard(request, reply);
    if (!signedIn) return;
    const { usage } = await this.gateway.run<ConsoleUsageQuery, ConsoleUsageQueryVariables>(
      'ConsoleUsage',
      signedIn,
      request,
      { days: 30 },
    );
    const manifest = readManifest();
    const head = manifest
      ? html`<link rel="stylesheet" href="/playground/assets/${manifest.charts.style}" />
          <script src="/playground/assets/${manifest.charts.script}" defer></script>`
      : html``;
    const figures = JSON.stringify({ days: usage.days, perMonth: usage.perMonth ?? null });
    return sendPage(
      reply,
      200,
      'Usage',
      html`${consoleNav('/console/usage')}
        <section class="card" id="usage-summary" data-usage="${figures}">
          <h1>Usage</h1>
          ${limitsSummary(usage)}
          ${
            usage.calls === 0
              ? html`<p class="empty" id="usage-empty">
                  No calls in the last 30 days. Create an API key under
                  <a href="/console">Keys and apps</a>, then call the API with it (for example
                  <code>curl -H "X-API-Key: …" ${'{'}base URL${'}'}/v1/vessels/lookup?imo=9074729</code>):
                  calls appear here within a second.
                </p>`
              : html`<div
                    class="chart"
                    id="chart-per-day"
                    role="img"
                    aria-label="Calls per day chart; the table below has the same numbers"
                  ></div>
                  <div
                    class="chart"
                    id="chart-quota"
                    role="img"
                    aria-label="Calls this month against the monthly quota; the figures are above"
                  ></div>
                  ${manifest ? '' : html`<p class="muted">Charts need the browser bundle: run <code>npm run build:playground</code>.</p>`}`
          }
        </section>
        ${usage.calls === 0 ? '' : usageTables(usage)}`,
      head,
    );
  }

  async requestLog(request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply | void> {
    const signedIn = await this.guard(request, reply);
    if (!signedIn) return;
    const query = request.query as Query;
    const filters = {
      outcome: OUTCOMES.find((o) => o === text(query.outcome)),
      status: text(query.status),
      operation: text(query.operation),
    };
    let page: ConsoleRequestLogQuery['requestLog'] | undefined;
    let error: string | undefined;
    try {
      if (filters.status && !/^\d{1,3}$/.test(filters.status))
        throw badInput('status', `must be an HTTP status such as 404 (got '${filters.status}')`);
      ({ requestLog: page } = await this.gateway.run<ConsoleRequestLogQuery, ConsoleRequestLogQueryVariables>(
        'ConsoleRequestLog',
        signedIn,
        request,
        {
          first: 25,
          after: text(query.after) || null,
          outcome: filters.outcome ?? null,
          status: filters.status ? Number(filters.status) : null,
          operation: filters.operation || null,
        },
      ));
    } catch (e) {
      if (!(e instanceof AppError) || e.status >= 500) throw e;
      error = e.message;
    }
    const filtered = Boolean(filters.outcome || filters.status || filters.operation);
    return sendPage(
      reply,
      error ? 400 : 200,
      'Request log',
      html`${consoleNav('/console/requests')}
        <section class="card">
          <h1>Request log</h1>
          ${lookupForm('')}
          <form method="get" action="/console/requests" id="log-filters" class="filters">
            <label for="outcome">Outcome</label>
            <select id="outcome" name="outcome">
              <option value="">Any</option>
              ${OUTCOMES.map((o) =>
                o === filters.outcome
                  ? html`<option value="${o}" selected>${OUTCOME_LABELS[o]}</option>`
                  : html`<option value="${o}">${OUTCOME_LABELS[o]}</option>`,
              )}
            </select>
            <label for="status">Status</label
            ><input type="text" id="status" name="status" inputmode="numeric" value="${filters.status}" />
            <label for="operation">Operation or route</label
            ><input
              type="text"
              id="operation"
              name="operation"
              value="${filters.operation}"
              placeholder="GET /v1/vessels/lookup"
            />
            <div class="actions">
              <button type="submit" id="apply-filters">Filter</button>
              ${filtered ? html`<a href="/console/requests">Clear filters</a>` : ''}
            </div>
          </form>
        </section>
        ${error ? html`<p class="card error" role="alert" id="error">${error}</p>` : ''}
        ${page ? callTable(page, filters, filtered) : ''}`,
    );
  }

  async call(request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply | void> {
    const signedIn = await this.guard(request, reply);
    if (!signedIn) return;
    const requestId = text((request.query as Query).id);
    let call: ConsoleCallFragment | undefined;
    let error: AppError | undefined;
    try {
      ({ requestLogEntry: call } = await this.gateway.run<ConsoleRequestQuery, ConsoleRequestQueryVariables>(
        'ConsoleRequest',
        signedIn,
        request,
        { requestId },
      ));
    } catch (e) {
      if (!(e instanceof AppError) || e.status >= 500) throw e;
      error = e;
    }
    return sendPage(
      reply,
      error?.status ?? 200,
      'Request',
      html`${consoleNav('/console/requests')}
        <section class="card">
          <h1>Request <code>${requestId}</code></h1>
          ${
            call
              ? callDetails(call)
              : html`<p class="error" role="alert" id="error">${error?.message}</p>
                  <p class="muted">
                    Request ids are in every response's <code>X-Request-Id</code> header and in the
                    <code>requestId</code> of REST error bodies. Only your account's calls can be looked up.
                  </p>`
          }
          ${lookupForm(requestId)}
          <p><a href="/console/requests">Back to the request log</a></p>
        </section>`,
    );
  }
}

function lookupForm(value: string): SafeHtml {
  return html`<form method="get" action="/console/request" id="lookup" class="lookup">
    <label for="request-id">Look up a request id</label
    ><input type="text" id="request-id" name="id" value="${value}" maxlength="64" required />
    <div class="actions"><button type="submit" id="lookup-button">Open</button></div>
  </form>`;
}

const ms = (value: number) => `${value} ms`;

function limitsSummary(usage: ConsoleUsageQuery['usage']): SafeHtml {
  const quota = usage.perMonth;
  return html`<dl class="figures">
    <dt>Plan</dt>
    <dd id="usage-plan">${planLabel(usage.plan as Plan)}</dd>
    <dt>Calls this month</dt>
    <dd id="calls-this-month">
      ${usage.callsThisMonth}${quota === null || quota === undefined ? ' (no monthly quota)' : ` of ${quota}`}
      ${quota ? html`<meter min="0" max="${quota}" value="${Math.min(usage.callsThisMonth, quota)}">${usage.callsThisMonth} of ${quota}</meter>` : ''}
    </dd>
    <dt>Per-minute limit</dt>
    <dd id="per-minute">
      ${usage.perMinute} per minute for the liquidity API (per account); ${usage.portOperationsPerMinute} per
      minute per credential for port operations
    </dd>
    <dt>Last 30 days</dt>
    <dd id="calls-period">
      ${usage.calls} calls: ${usage.successful} succeeded, ${usage.clientErrors} client errors,
      ${usage.serverErrors} server errors
    </dd>
  </dl>`;
}

function usageTables(usage: ConsoleUsageQuery['usage']): SafeHtml {
  const link = (params: Record<string, string>) =>
    `/console/requests?${new URLSearchParams(params).toString()}`;
  return html`<section class="card">
      <h2>By operation or route</h2>
      <table id="usage-operations">
        <caption class="muted">
          The ${usage.byOperation.length} most called in the last 30 days
        </caption>
        <thead>
          <tr>
            <th scope="col">Operation or route</th>
            <th scope="col">Calls</th>
            <th scope="col">Succeeded</th>
            <th scope="col">4xx</th>
            <th scope="col">5xx</th>
          </tr>
        </thead>
        <tbody>
          ${usage.byOperation.map(
            (o) =>
              html`<tr>
                <th scope="row">
                  <a href="${link({ operation: o.operation })}"><code>${o.operation}</code></a>
                </th>
                <td>${o.calls}</td>
                <td>${o.successful}</td>
                <td>${o.clientErrors}</td>
                <td>${o.serverErrors}</td>
              </tr>`,
          )}
        </tbody>
      </table>
      <h2>By outcome</h2>
      <table id="usage-outcomes">
        <thead>
          <tr>
            <th scope="col">Status</th>
            <th scope="col">Code</th>
            <th scope="col">Calls</th>
          </tr>
        </thead>
        <tbody>
          ${usage.byOutcome.map(
            (o) =>
              html`<tr>
                <th scope="row"><a href="${link({ status: String(o.status) })}">${o.status}</a></th>
                <td>${o.code ? html`<code>${o.code}</code>` : '—'}</td>
                <td>${o.calls}</td>
              </tr>`,
          )}
        </tbody>
      </table>
    </section>
    <section class="card">
      <h2>Per day</h2>
      <table id="usage-days">
        <caption class="muted">
          UTC days, oldest first: the numbers the charts draw
        </caption>
        <thead>
          <tr>
            <th scope="col">Day</th>
            <th scope="col">Calls</th>
            <th scope="col">Succeeded</th>
            <th scope="col">4xx</th>
            <th scope="col">5xx</th>
          </tr>
        </thead>
        <tbody>
          ${usage.days.map(
            (d) =>
              html`<tr data-date="${d.date}">
                <th scope="row">${d.date}</th>
                <td>${d.calls}</td>
                <td>${d.successful}</td>
                <td>${d.clientErrors}</td>
                <td>${d.serverErrors}</td>
              </tr>`,
          )}
        </tbody>
      </table>
    </section>`;
}

function callTable(
  page: ConsoleRequestLogQuery['requestLog'],
  filters: { outcome?: string; status: string; operation: string },
  filtered: boolean,
): SafeHtml {
  if (page.nodes.length === 0) {
    return html`<p class="card empty" id="log-empty">
      ${
        filtered
          ? 'No calls match these filters. Clear them, or widen them, to see more.'
          : html`No calls yet. Create an API key under <a href="/console">Keys and apps</a> and call the API:
              each call appears here within a second, with its status, latency and request id.`
      }
    </p>`;
  }
  const next = page.pageInfo.hasNextPage
    ? `/console/requests?${new URLSearchParams({
        ...(filters.outcome ? { outcome: filters.outcome } : {}),
        ...(filters.status ? { status: filters.status } : {}),
        ...(filters.operation ? { operation: filters.operation } : {}),
        after: page.pageInfo.endCursor ?? '',
      }).toString()}`
    : null;
  return html`<section class="card">
    <p class="muted" id="log-count">${page.totalCount} matching calls, newest first</p>
    <table id="request-log">
      <thead>
        <tr>
          <th scope="col">Time (UTC)</th>
          <th scope="col">Door</th>
          <th scope="col">Operation or route</th>
          <th scope="col">Status</th>
          <th scope="col">Latency</th>
          <th scope="col">Credential</th>
          <th scope="col">IP</th>
          <th scope="col">Request id</th>
        </tr>
      </thead>
      <tbody>
        ${page.nodes.map(
          (c) =>
            html`<tr data-request-id="${c.requestId}" class="${c.status >= 400 ? 'failed' : ''}">
              <td>${c.at}</td>
              <td>${c.door ?? '—'}</td>
              <td><code>${c.operation}</code></td>
              <td>${c.status}${c.errorCode ? html` <code>${c.errorCode}</code>` : ''}</td>
              <td>${ms(c.durationMs)}</td>
              <td>${credential(c)}</td>
              <td>${c.ip ?? '—'}</td>
              <td>
                <a href="/console/request?id=${encodeURIComponent(c.requestId)}"
                  ><code>${c.requestId}</code></a
                >
              </td>
            </tr>`,
        )}
      </tbody>
    </table>
    <p class="pager">
      ${next ? html`<a href="${next}" id="next-page" rel="next">Older calls</a>` : html`<span class="muted">No older calls.</span>`}
    </p>
  </section>`;
}

const credential = (c: ConsoleCallFragment): string =>
  c.credentialKind ? `${c.credentialKind.replace('_', ' ')} ${c.credentialId?.slice(0, 8) ?? ''}` : 'none';

function callDetails(c: ConsoleCallFragment): SafeHtml {
  return html`<dl class="figures" id="call">
    <dt>Time (UTC)</dt>
    <dd id="call-at">${c.at}</dd>
    <dt>Door</dt>
    <dd id="call-door">${c.door ?? '—'}</dd>
    <dt>Operation or route</dt>
    <dd id="call-operation"><code>${c.operation}</code></dd>
    <dt>Status</dt>
    <dd id="call-status">${c.status}</dd>
    <dt>Error code</dt>
    <dd id="call-code">${c.errorCode ?? '—'}</dd>
    <dt>Latency</dt>
    <dd id="call-latency">${ms(c.durationMs)}</dd>
    <dt>Credential</dt>
    <dd id="call-credential">${c.credentialKind ?? 'none'} <code>${c.credentialId ?? ''}</code></dd>
    <dt>IP</dt>
    <dd id="call-ip">${c.ip ?? '—'}</dd>
    <dt>User agent</dt>
    <dd id="call-user-agent">${c.userAgent ?? '—'}</dd>
  </dl>`;
}
