import type { ParamSpec, RestRoute } from '../gateway/doors/rest-routes.js';
import type { RestShape } from '../gateway/doors/rest-shape.js';
import { BACKTEST_MAX } from './read-model.js';
import { BACKTEST_MIN } from './scores.js';

/**
 * The liquidity REST routes: each runs a named operation from
 * schema/operations/rest/liquidity.graphql. Lists are JSON arrays (no envelope); paging is
 * limit (1–100, default 20) and offset. GET /v1/export is hand-written (streaming) in export.ts.
 */
/**
 * As the document's sample shows them: money as JSON numbers (GraphQL keeps decimal strings),
 * `category` lower-case, snake_case keys at every level.
 */
export const LIQUIDITY_SHAPE: RestShape = {
  numbers: ['aum_usd', 'total_aum_usd', 'minimum_investment_usd'],
  lowerCase: ['category'],
  snakeCaseKeys: true,
};

const paging: Record<string, ParamSpec> = {
  limit: { from: 'query', type: 'int', default: 20, min: 1, max: 100 },
  offset: { from: 'query', type: 'int', default: 0, min: 0 },
};
const profile: ParamSpec = { from: 'query', name: 'profile_id', type: 'string' };
const slug: ParamSpec = { from: 'path', type: 'string', required: true };
const profileBody: Record<string, ParamSpec> = {
  name: { from: 'body', name: 'name', type: 'string' },
  weights: { from: 'body', name: 'weights', type: 'json' },
  penaltyCaps: { from: 'body', name: 'penalty_caps', type: 'json' },
};

const routes: RestRoute[] = [
  {
    method: 'GET',
    path: '/v1/protocols',
    operation: 'RestProtocols',
    variables: {
      ...paging,
      category: { from: 'query', type: 'string', enum: true },
      tier: { from: 'query', type: 'string', enum: true },
      minScore: { from: 'query', name: 'min_score', type: 'float', min: 0, max: 100 },
      minAum: { from: 'query', name: 'min_aum', type: 'float', min: 0 },
    },
    result: 'protocols.nodes',
  },
  {
    method: 'GET',
    path: '/v1/protocols/:slug',
    operation: 'RestProtocol',
    variables: { slug },
    result: 'protocol',
    notFound: { resource: 'Protocol', param: 'slug' },
  },
  {
    method: 'GET',
    path: '/v1/scores',
    operation: 'RestScores',
    variables: { ...paging, profileId: profile },
    result: 'scores.nodes',
  },
  {
    method: 'GET',
    path: '/v1/scores/:slug/history',
    operation: 'RestScoreHistory',
    variables: { slug, profileId: profile },
    result: 'scoreHistory',
    notFound: { resource: 'Protocol', param: 'slug' },
  },
  {
    method: 'GET',
    path: '/v1/audits/:auditId',
    operation: 'RestScoreAudit',
    variables: { auditId: { from: 'path', type: 'string', required: true } },
    result: 'scoreAudit',
    notFound: { resource: 'Score audit', param: 'auditId' },
  },
  {
    method: 'GET',
    path: '/v1/backtest',
    operation: 'RestBacktest',
    variables: {
      lookback: { from: 'query', type: 'int', default: 90, min: BACKTEST_MIN, max: BACKTEST_MAX },
    },
    result: 'backtest',
  },
  {
    method: 'GET',
    path: '/v1/market',
    operation: 'RestMarket',
    variables: { category: { from: 'query', type: 'string', enum: true } },
    result: 'market',
  },
  { method: 'GET', path: '/v1/watchlist', operation: 'RestWatchlist', result: 'watchlist' },
  {
    method: 'POST',
    path: '/v1/watchlist',
    operation: 'RestUpdateWatchlist',
    variables: {
      add: { from: 'body', name: 'add', type: 'stringList' },
      scoreChangeThreshold: { from: 'body', name: 'score_change_threshold', type: 'float' },
      tierShift: { from: 'body', name: 'tier_shift', type: 'boolean' },
      aumChangePct: { from: 'body', name: 'aum_change_pct', type: 'float' },
      complianceEvents: { from: 'body', name: 'compliance_events', type: 'boolean' },
    },
    result: 'updateWatchlist',
  },
  {
    method: 'DELETE',
    path: '/v1/watchlist/:slug',
    operation: 'RestRemoveFromWatchlist',
    variables: { slug },
    result: 'removeFromWatchlist',
    status: 204,
  },
  {
    method: 'GET',
    path: '/v1/watchlist/alerts',
    operation: 'RestWatchlistAlerts',
    variables: paging,
    result: 'watchlistAlerts.nodes',
  },
  {
    method: 'GET',
    path: '/v1/scoring-profiles',
    operation: 'RestScoringProfiles',
    variables: paging,
    result: 'scoringProfiles.nodes',
  },
  {
    method: 'POST',
    path: '/v1/scoring-profiles',
    operation: 'RestCreateScoringProfile',
    variables: profileBody,
    result: 'createScoringProfile',
    status: 201,
  },
  {
    method: 'PUT',
    path: '/v1/scoring-profiles/:id',
    operation: 'RestUpdateScoringProfile',
    variables: { id: { from: 'path', type: 'string', required: true }, ...profileBody },
    result: 'updateScoringProfile',
  },
  {
    method: 'DELETE',
    path: '/v1/scoring-profiles/:id',
    operation: 'RestDeleteScoringProfile',
    variables: { id: { from: 'path', type: 'string', required: true } },
    result: 'deleteScoringProfile',
    status: 204,
  },
];

export const liquidityRestRoutes: RestRoute[] = routes.map((route) => ({ ...route, shape: LIQUIDITY_SHAPE }));
