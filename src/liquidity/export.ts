import { Readable } from 'node:stream';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { EntityManager } from '@mikro-orm/knex';
import type { AppServices } from '../gateway/schema/context.js';
import type { Operations } from '../gateway/pipeline/operation.js';
import type { DescribedRoute } from '../gateway/doors/openapi.js';
import { authorizeField, repeatedParameter } from '../gateway/doors/rest.js';
import { todayOf } from '../kernel/clock.js';
import { badInput } from '../kernel/errors.js';
import { shapeBody } from '../gateway/doors/rest-shape.js';
import { LIQUIDITY_SHAPE } from './rest.js';
import type { Published } from './read-model.js';
import { latestScores, scoringFor, type Scoring, type ScoreView } from './scores.js';

/**
 * GET /v1/export?format=csv|json[&profile_id=…]: every protocol field with its latest score,
 * streamed page by page from the published state (src/liquidity/read-model.ts).
 * The access rule is the one on `Query.exportRows` (Professional plan, export:liquidity).
 */

type Cell = string | number | boolean | null;

/** Column order of both formats; nested values (chains, attribution, filings) are JSON text in CSV. */
export const EXPORT_COLUMNS: Array<[string, (v: ScoreView) => Cell | object]> = [
  ['id', (v) => v.protocol.id],
  ['slug', (v) => v.protocol.slug],
  ['name', (v) => v.protocol.name],
  ['category', (v) => v.protocol.category],
  ['active', (v) => v.protocol.active],
  ['description', (v) => v.protocol.description],
  ['token_symbol', (v) => v.protocol.tokenSymbol],
  ['issuer', (v) => v.protocol.issuer],
  ['jurisdiction', (v) => v.protocol.jurisdiction],
  ['regulatory_status', (v) => v.protocol.regulatoryStatus],
  ['custodian', (v) => v.protocol.custodian],
  ['qualified_custodian', (v) => v.protocol.qualifiedCustodian],
  ['auditor', (v) => v.protocol.auditor ?? null],
  ['governance_model', (v) => v.protocol.governanceModel],
  ['governance_maturity', (v) => v.protocol.governanceMaturity],
  ['chains', (v) => v.protocol.chains],
  ['token_standard', (v) => v.protocol.tokenStandard],
  ['redemption_frequency', (v) => v.protocol.redemptionFrequency],
  ['notice_period_days', (v) => v.protocol.noticePeriodDays],
  ['redemption_gates', (v) => v.protocol.redemptionGates],
  ['minimum_investment_usd', (v) => v.protocol.minimumInvestmentUsd],
  ['yield_pct', (v) => v.protocol.yieldPct],
  ['yield_attribution', (v) => v.protocol.yieldAttribution],
  ['launch_date', (v) => v.protocol.launchDate],
  ['kyc_required', (v) => v.protocol.kycRequired],
  ['accredited_only', (v) => v.protocol.accreditedOnly],
  ['sanctions_screening', (v) => v.protocol.sanctionsScreening],
  ['transfer_restrictions', (v) => v.protocol.transferRestrictions],
  ['regulatory_filings', (v) => v.protocol.regulatoryFilings],
  ['website', (v) => v.protocol.website ?? null],
  ['aum_usd', (v) => v.protocol.aumUsd],
  ['currency', () => 'USD'],
  ['liquidity_score', (v) => v.score],
  ['liquidity_tier', (v) => v.tier],
  ['component_aum', (v) => v.components.aum],
  ['component_redemption', (v) => v.components.redemption],
  ['component_volume', (v) => v.components.volume],
  ['component_issuer', (v) => v.components.issuer],
  ['component_jurisdiction', (v) => v.components.jurisdiction],
  ['penalty_total', (v) => Math.round(v.penalties.reduce((s, p) => s + p.points, 0) * 100) / 100],
  ['confidence', (v) => v.confidence.level],
  ['as_of', (v) => v.asOf],
  ['data_date', (v) => v.dataDate],
  ['audit_id', (v) => v.auditId],
  ['methodology_version', (v) => v.methodologyVersion],
  ['profile_id', (v) => v.profileId],
];

/** One protocol as both formats write it, shaped like every liquidity REST body (numbers, lower-case category, snake_case inside). */
export function exportRow(v: ScoreView): Record<string, unknown> {
  return shapeBody(
    Object.fromEntries(EXPORT_COLUMNS.map(([name, get]) => [name, get(v)])),
    LIQUIDITY_SHAPE,
  ) as Record<string, unknown>;
}

/** RFC 4180: quote fields holding a comma, quote, CR or LF; double embedded quotes. */
export function csvField(value: unknown): string {
  const text =
    value === null || value === undefined
      ? ''
      : typeof value === 'object'
        ? JSON.stringify(value)
        : String(value);
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

const PAGE = 100;

/** Page by page from one snapshot, so the export is one consistent version however long it streams. */
async function* rows(
  em: EntityManager,
  state: Published,
  scoring: Scoring,
  now: Date,
): AsyncGenerator<Record<string, unknown>> {
  for (let offset = 0; ; offset += PAGE) {
    const { items } = await latestScores(() => em, state, scoring, { offset, limit: PAGE }, now);
    for (const v of items) yield exportRow(v);
    if (items.length < PAGE) return;
  }
}

async function* csv(source: AsyncGenerator<Record<string, unknown>>): AsyncGenerator<string> {
  yield EXPORT_COLUMNS.map(([name]) => name).join(',') + '\r\n';
  for await (const row of source) yield Object.values(row).map(csvField).join(',') + '\r\n';
}

async function* json(source: AsyncGenerator<Record<string, unknown>>): AsyncGenerator<string> {
  let first = true;
  yield '[';
  for await (const row of source) {
    yield (first ? '' : ',') + JSON.stringify(row);
    first = false;
  }
  yield ']';
}

/** One query parameter given at most once: a repeated one is ambiguous, the same 400 as the shims give. */
function single(query: Record<string, unknown>, name: string): string | undefined {
  const value = query[name];
  if (value === undefined || value === '') return undefined;
  if (Array.isArray(value)) throw repeatedParameter(name, value.length);
  if (typeof value !== 'string') throw badInput(name, 'must be a string');
  return value;
}

export function registerExport(app: FastifyInstance, services: AppServices, operations: Operations): void {
  for (const url of ['/v1/export', '/api/v1/export']) {
    app.get(url, { config: { audit: 'GET /v1/export' } }, async (request: FastifyRequest, reply) => {
      const principal = await authorizeField(operations, request, reply, 'Query.exportRows');
      const query = request.query as Record<string, unknown>;
      const requested = single(query, 'format') ?? 'json';
      const format = requested.toLowerCase();
      if (format !== 'csv' && format !== 'json')
        throw badInput('format', `must be csv or json (got '${requested}')`);
      const em = services.db.em();
      const scoring = await scoringFor(() => em, principal, single(query, 'profile_id'));
      const date = todayOf(services.clock);
      reply
        .header(
          'content-type',
          format === 'csv' ? 'text/csv; charset=utf-8; header=present' : 'application/json; charset=utf-8',
        )
        .header('content-disposition', `attachment; filename="tidegate-liquidity-${date}.${format}"`);
      const source = rows(em, await services.readModel.current(), scoring, services.clock.now());
      return reply.send(Readable.from(format === 'csv' ? csv(source) : json(source)));
    });
  }
}

/** GET /v1/export in the OpenAPI document (hand-written: it streams). */
export const exportOpenApi: DescribedRoute[] = [
  {
    method: 'get',
    path: '/v1/export',
    operation: {
      operationId: 'Export',
      summary: 'Bulk export of the latest scores, streamed (scope export:liquidity)',
      parameters: [
        { name: 'format', in: 'query', schema: { type: 'string', enum: ['csv', 'json'], default: 'json' } },
        { name: 'profile_id', in: 'query', schema: { type: 'string' } },
      ],
      responses: {
        '200': {
          description: 'One row per protocol',
          content: {
            'application/json': { schema: { type: 'array', items: { type: 'object' } } },
            'text/csv': { schema: { type: 'string' } },
          },
        },
        ...Object.fromEntries(
          [400, 401, 402, 403, 429].map((s) => [String(s), { $ref: `#/components/responses/${s}` }]),
        ),
      },
      security: [{ apiKey: [] }, { bearer: [] }, { oauth2: ['export:liquidity'] }],
    },
  },
];
