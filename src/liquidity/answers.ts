import type { AnswerSource } from '../gateway/pipeline/answers.js';
import { andThen } from '../kernel/maybe-async.js';
import { PROFILE_FIELDS } from './protocols.js';
import type { Published } from './read-model.js';

/*
 * The liquidity reads whose results the gateway may keep between requests
 * (src/gateway/pipeline/answers.ts): the protocol list and profiles, the market with its indices, and the
 * backtest. Each is a function of the published snapshot (read-model.ts) and the arguments only,
 * and the same for every caller, so one kept result serves every account. The version is the
 * snapshot itself: a new snapshot (a local write, a change from another process through the bus
 * or the version poll) is a new version, so a kept answer is exactly as fresh as the read model.
 *
 * Scores and score history are kept under the default methodology only: with a `profileId` they
 * read the caller's own scoring profile (a database row the snapshot does not cover) and record the
 * audit ids served, so such a request executes every time. Left out: score audits, watchlists,
 * profiles, exports and every mutation.
 */
const FIELDS: Record<string, readonly string[]> = {
  Query: ['protocols', 'protocol', 'market', 'backtest', 'scores', 'score', 'scoreHistory'],
  ScoreConnection: ['edges', 'nodes', 'pageInfo', 'totalCount'],
  ScoreEdge: ['cursor', 'node'],
  Score: [
    'protocolId',
    'slug',
    'name',
    'score',
    'tier',
    'components',
    'penalties',
    'weights',
    'confidence',
    'auditId',
    'asOf',
    'dataDate',
    'methodologyVersion',
    'profileId',
    'protocol',
  ],
  ScoreComponents: ['aum', 'redemption', 'volume', 'issuer', 'jurisdiction'],
  PenaltyAssessment: ['kind', 'points', 'cap'],
  ScoreWeights: ['aum', 'redemption', 'volume', 'issuer', 'jurisdiction'],
  DataConfidence: ['level', 'score', 'freshness', 'completeness'],
  ScoreHistory: ['slug', 'profileId', 'trajectory', 'trend', 'points'],
  ScorePoint: ['date', 'score', 'tier', 'auditId'],
  ProtocolConnection: ['edges', 'nodes', 'pageInfo', 'totalCount'],
  ProtocolEdge: ['cursor', 'node'],
  PageInfo: ['hasNextPage', 'hasPreviousPage', 'startCursor', 'endCursor'],
  // What a caller may set, and what the snapshot derives (score, tier, AUM, dates): all plain data.
  Protocol: [
    ...PROFILE_FIELDS,
    'id',
    'liquidityScore',
    'liquidityTier',
    'scoreAsOf',
    'lastDataAt',
    'createdAt',
    'updatedAt',
    'aumUsd',
    'currency',
  ],
  YieldSource: ['source', 'sharePct'],
  RegulatoryFiling: ['regulator', 'reference', 'filedOn'],
  Market: [
    'category',
    'asOf',
    'protocolCount',
    'totalAumUsd',
    'currency',
    'averageScore',
    'averageYieldPct',
    'tierDistribution',
    'indices',
  ],
  TierDistribution: ['L1', 'L2', 'L3', 'ILLIQUID'],
  CompositeIndex: ['code', 'name', 'score'],
  Backtest: [
    'lookbackDays',
    'from',
    'to',
    'protocolsEvaluated',
    'aumRetentionCorrelation',
    'l1StabilityRate',
    'illiquidPredictionAccuracy',
    'l1AtStart',
    'illiquidAtEnd',
  ],
};

/** Each snapshot's number: a snapshot reloaded at the same database version is still a new one. */
const numbers = new WeakMap<Published, number>();
let loaded = 0;

function numberOf(snapshot: Published): string {
  let n = numbers.get(snapshot);
  if (n === undefined) numbers.set(snapshot, (n = ++loaded));
  return String(n);
}

export const liquidityAnswers: AnswerSource = {
  name: 'liquidity',
  coordinates: new Set(Object.entries(FIELDS).flatMap(([type, fields]) => fields.map((f) => `${type}.${f}`))),
  // The same published data for every caller.
  scopeOf: () => 'published',
  keptOnlyWithout: new Set([
    'Query.scores(profileId:)',
    'Query.score(profileId:)',
    'Query.scoreHistory(profileId:)',
  ]),
  version: (services) => andThen(services.readModel.current(), numberOf),
};
