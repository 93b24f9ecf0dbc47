import { isIP } from 'node:net';
import { resolve } from 'node:path';
import { parseDuration } from './kernel/clock.js';
import { Plan } from './kernel/plans.js';
import { parseMasterKey } from './kernel/secret-box.js';

/** Per-plan limits for the liquidity API. `null` means unlimited. */
export interface PlanLimit {
  perMinute: number;
  perMonth: number | null;
}

/** The parts the schema splits into when run as Apollo Federation 2 subgraphs (src/modules.ts). */
export const SUBGRAPH_NAMES = ['accounts', 'port-ops', 'liquidity'] as const;
export type SubgraphName = (typeof SUBGRAPH_NAMES)[number];

export interface Config {
  /** Serve only this subgraph's schema on /graphql (SUBGRAPH); unset: the whole gateway. */
  subgraph: SubgraphName | undefined;
  port: number;
  host: string;
  /** A SQLite file path or a postgres:// URL. */
  databaseUrl: string;
  /** SQLite's `synchronous` on the server's and the CLI's connections (SQLITE_SYNCHRONOUS); unused on PostgreSQL. */
  sqliteSynchronous: SqliteSynchronous;
  /** PostgreSQL connections each process's pool opens at most (DATABASE_POOL_MAX); SQLite has one. */
  databasePoolMax: number;
  /** Public origin of this service; the OAuth issuer and the base of absolute links. */
  publicUrl: string;
  /** The resource API's URL: the `aud` of every access token issued and required when verifying. */
  resourceUrl: string;
  /** Fastify trustProxy: false, true, or a comma-separated list of addresses/CIDRs/keywords. */
  trustProxy: boolean | string;
  redisUrl: string | undefined;
  logLevel: string;
  /** Create the demo dataset on an empty database at start. */
  demoSeed: boolean;
  maxActiveApiKeys: number;
  apiKeyRotationGraceMs: number;
  /** How long a verified API key may be served from the in-memory cache. */
  credentialCacheTtlMs: number;
  /** How often each process looks for API keys revoked elsewhere. */
  revocationPollMs: number;
  /** How often each process checks whether another one changed a read model (the bus's fallback). */
  readModelPollMs: number;
  shutdownGraceMs: number;
  /** After SIGTERM, how long requests on open connections are still answered (with Connection: close). */
  shutdownDrainMs: number;
  documentsDir: string;
  documentMaxBytes: number;
  /** HMAC key of signed document-upload URLs; derived from the secrets master key when unset. */
  documentUploadSecret: string | undefined;
  /** Master key for secrets kept encrypted at rest (SECRETS_KEY); the key file is used when unset. */
  secretsKey: Buffer | undefined;
  /** Where the master key lives when SECRETS_KEY is unset; created on first start. */
  secretsKeyFile: string;
  webhookAllowPrivate: boolean;
  /** Per-attempt HTTP timeout of a webhook delivery. */
  webhookTimeoutMs: number;
  /** First retry delay; each later one is 3× longer (with ±20 % jitter). */
  webhookRetryBaseMs: number;
  /** After a secret rotation, how long deliveries are also signed with the old secret. */
  webhookSecretOverlapMs: number;
  /** Delivered/failed webhook deliveries and dispatched events older than this are purged. */
  eventRetentionMs: number;
  /** Attempts per delivery before it fails for good and the endpoint is disabled. */
  webhookMaxAttempts: number;
  /** How often the outbox worker looks for work it was not told about (other processes, retries). */
  webhookPollMs: number;
  /** Run the webhook outbox worker in this process. */
  webhookWorker: boolean;
  /** Channel prefix on Redis, so several deployments (or test runs) can share one server. */
  redisPrefix: string;
  wsMaxSubscriptionsPerConnection: number;
  /** Open graphql-ws connections one credential may hold; more are closed with 4429. */
  wsMaxConnectionsPerCredential: number;
  /** Open WebSocket connections from one client address (authenticated or not); more are closed with 4429. */
  wsMaxConnectionsPerAddress: number;
  /** graphql-ws pings (keep-alive or refresh) one connection may send per minute, in bursts of 10. */
  wsMaxPingsPerMinute: number;
  /** When set, GET /metrics wants `Authorization: Bearer <token>`; open otherwise (scrape from a private network). */
  metricsToken: string | undefined;
  /** OTLP/HTTP collector (OTEL_EXPORTER_OTLP_ENDPOINT); tracing is off, at no cost, when unset. */
  otelEndpoint: string | undefined;
  /** service.name of exported spans (OTEL_SERVICE_NAME). */
  otelServiceName: string;
  /** Only operations registered in schema/operations/ may run on /graphql (TRUSTED_DOCUMENTS). */
  trustedDocuments: boolean;
  wsKeepAliveMs: number;
  /** Events a subscription may have waiting to be sent before it is ended (a reader slower than the feed). */
  wsMaxBacklogEvents: number;
  planLimits: Record<Plan, PlanLimit>;
  /** Per-credential requests per minute on the port-operations API. */
  portOpsPerMinute: number;
  /** Requests per minute of one sandbox key (every operation; plan-gated ones also spend the plan's). */
  sandboxPerMinute: number;
  /** How long a sandbox key from the playground lives. */
  sandboxKeyTtlMs: number;
  /** Unexpired sandbox keys one sandbox account may hold; the next one is refused with 409. */
  sandboxMaxActiveKeys: number;
  /** Demand control: deepest selection and largest estimated cost an operation may have. */
  graphqlMaxDepth: number;
  graphqlMaxCost: number;
  /** Largest GraphQL document, in lexical tokens; parsing stops there, before any validation. */
  graphqlMaxTokens: number;
  /** Time budget of one operation; long computations stop with DEADLINE_EXCEEDED past it. */
  graphqlDeadlineMs: number;
  /** Memory for query results kept per data version (src/gateway/pipeline/answers.ts), in MiB; 0 keeps none. */
  answerCacheMb: number;
  /** Serves GET and POST /bench/bare, the floors `npm run bench` measures. Off in production. */
  benchRoutes: boolean;
  /** Console / OAuth login session lifetime. */
  authSessionTtlMs: number;
  /** Failed sign-ins allowed per (IP, email) within authThrottleWindowMs before 429. */
  authLoginMaxFailures: number;
  /** Failed sign-ins allowed per IP, whatever the email, within the window. */
  authLoginMaxFailuresPerIp: number;
  /** Failed client authentications allowed per (IP, client_id) within authThrottleWindowMs before 429. */
  authClientMaxFailures: number;
  /** Failed client authentications allowed per IP, whatever the client, within the window. */
  authClientMaxFailuresPerIp: number;
  authThrottleWindowMs: number;
  /** How often the access-token deny-list is reloaded (revocations made by other processes or the CLI). */
  authDenyListRefreshMs: number;
  /** Origins whose pages may call the API (GraphQL, /v1, /api/v1) from a browser; `*` any; empty: CORS off. */
  corsOrigins: string[];
}

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n  - ${problems.join('\n  - ')}`);
    this.name = 'ConfigError';
  }
}

type Env = Record<string, string | undefined>;

const DEFAULT_PLAN_LIMITS: Record<Plan, PlanLimit> = {
  [Plan.OBSERVER]: { perMinute: 0, perMonth: 0 },
  [Plan.ANALYST]: { perMinute: 60, perMonth: 2_000 },
  [Plan.PROFESSIONAL]: { perMinute: 200, perMonth: 10_000 },
  [Plan.INSTITUTIONAL]: { perMinute: 600, perMonth: null },
};

/** Reads the environment once; every other module gets its settings from the returned object. */
export function loadConfig(env: Env = process.env): Config {
  const problems: string[] = [];

  const int = (name: string, fallback: number, min = 0, max = Number.MAX_SAFE_INTEGER): number => {
    const raw = env[name];
    if (raw === undefined || raw === '') return fallback;
    const value = Number(raw);
    if (!Number.isInteger(value) || value < min || value > max) {
      problems.push(`${name} must be an integer between ${min} and ${max} (got '${raw}')`);
      return fallback;
    }
    return value;
  };
  const bool = (name: string, fallback: boolean): boolean => {
    const value = parseFlag(env[name]);
    if (value === 'invalid') problems.push(`${name} must be true or false (got '${env[name]}')`);
    return typeof value === 'boolean' ? value : fallback;
  };
  const duration = (name: string, fallback: string): number => {
    const raw = env[name] || fallback;
    try {
      return parseDuration(raw);
    } catch (e) {
      problems.push(`${name}: ${(e as Error).message}`);
      return parseDuration(fallback);
    }
  };
  const optionalInt = (name: string, fallback: number | null): number | null => {
    const raw = env[name]?.trim().toLowerCase();
    if (raw === 'unlimited') return null;
    return raw === undefined || raw === '' ? fallback : int(name, fallback ?? 0);
  };

  const port = int('PORT', 4000, 0, 65535);
  const host = env.HOST || '127.0.0.1';
  const databaseUrl = env.DATABASE_URL || resolve('data', 'tidegate.sqlite');
  if (/^[a-z]+:\/\//i.test(databaseUrl) && !/^postgres(ql)?:\/\//i.test(databaseUrl)) {
    problems.push(`DATABASE_URL must be a SQLite file path or a postgres:// URL (got '${databaseUrl}')`);
  }
  const publicUrl = (env.PUBLIC_URL || `http://${host.includes(':') ? `[${host}]` : host}:${port}`).replace(
    /\/+$/,
    '',
  );
  try {
    new URL(publicUrl);
  } catch {
    problems.push(`PUBLIC_URL must be an absolute URL (got '${publicUrl}')`);
  }
  const resourceUrl = (env.RESOURCE_URL || publicUrl).replace(/\/+$/, '');
  try {
    new URL(resourceUrl);
  } catch {
    problems.push(`RESOURCE_URL must be an absolute URL (got '${resourceUrl}')`);
  }
  const authLoginMaxFailures = int('AUTH_LOGIN_MAX_FAILURES', 5, 1);
  const authClientMaxFailures = int('AUTH_CLIENT_MAX_FAILURES', 10, 1);

  let secretsKey: Buffer | undefined;
  if (env.SECRETS_KEY) {
    secretsKey = parseMasterKey(env.SECRETS_KEY) ?? undefined;
    if (!secretsKey) problems.push('SECRETS_KEY must be 32 bytes as 64 hex or 43 base64url characters');
  }

  const planLimits = Object.fromEntries(
    Object.entries(DEFAULT_PLAN_LIMITS).map(([plan, limit]) => [
      plan,
      {
        perMinute: int(`LIMIT_${plan}_PER_MINUTE`, limit.perMinute),
        perMonth: optionalInt(`LIMIT_${plan}_PER_MONTH`, limit.perMonth),
      },
    ]),
  ) as Record<Plan, PlanLimit>;

  const config: Config = {
    subgraph: parseSubgraph(env.SUBGRAPH, problems),
    port,
    host,
    databaseUrl,
    sqliteSynchronous: parseChoice(
      'SQLITE_SYNCHRONOUS',
      env.SQLITE_SYNCHRONOUS,
      SQLITE_SYNCHRONOUS,
      'normal',
      problems,
    ),
    databasePoolMax: int('DATABASE_POOL_MAX', DEFAULT_POOL_MAX, 1, 1_000),
    publicUrl,
    resourceUrl,
    trustProxy: parseTrustProxy(env.TRUST_PROXY, problems),
    redisUrl: env.REDIS_URL || undefined,
    logLevel: parseChoice('LOG_LEVEL', env.LOG_LEVEL, LOG_LEVELS, 'info', problems),
    demoSeed: bool('DEMO_SEED', true),
    maxActiveApiKeys: int('MAX_ACTIVE_API_KEYS', 5, 1, 1000),
    apiKeyRotationGraceMs: duration('API_KEY_ROTATION_GRACE', '24h'),
    credentialCacheTtlMs: duration('CREDENTIAL_CACHE_TTL', '30s'),
    revocationPollMs: duration('REVOCATION_POLL', '2s'),
    readModelPollMs: duration('READ_MODEL_POLL', '2s'),
    shutdownGraceMs: duration('SHUTDOWN_GRACE', '10s'),
    shutdownDrainMs: int('SHUTDOWN_DRAIN_MS', 1000, 0, 600_000),
    documentsDir: resolve(env.DOCUMENTS_DIR || resolve('data', 'documents')),
    documentMaxBytes: int('DOCUMENT_MAX_BYTES', 25 * 1024 * 1024, 1),
    documentUploadSecret: env.DOCUMENT_UPLOAD_SECRET || undefined,
    secretsKey,
    secretsKeyFile: resolve(env.SECRETS_KEY_FILE || resolve('data', 'secrets.key')),
    webhookAllowPrivate: bool('WEBHOOK_ALLOW_PRIVATE', false),
    webhookTimeoutMs: duration('WEBHOOK_TIMEOUT', '10s'),
    webhookRetryBaseMs: duration('WEBHOOK_RETRY_BASE', '80s'),
    webhookSecretOverlapMs: duration('WEBHOOK_SECRET_OVERLAP', '24h'),
    eventRetentionMs: duration('EVENT_RETENTION', '30d'),
    webhookMaxAttempts: int('WEBHOOK_MAX_ATTEMPTS', 8, 1, 20),
    webhookPollMs: duration('WEBHOOK_POLL', '1s'),
    webhookWorker: bool('WEBHOOK_WORKER', true),
    redisPrefix: env.REDIS_PREFIX || 'tidegate',
    wsMaxSubscriptionsPerConnection: int('WS_MAX_SUBSCRIPTIONS_PER_CONNECTION', 50, 1, 10_000),
    wsMaxConnectionsPerCredential: int('WS_MAX_CONNECTIONS_PER_CREDENTIAL', 50, 1, 100_000),
    wsMaxConnectionsPerAddress: int('WS_MAX_CONNECTIONS_PER_ADDRESS', 200, 1, 1_000_000),
    wsMaxPingsPerMinute: int('WS_MAX_PINGS_PER_MINUTE', 60, 1, 60_000),
    wsKeepAliveMs: duration('WS_KEEPALIVE', '12s'),
    wsMaxBacklogEvents: int('WS_MAX_BACKLOG_EVENTS', 1000, 1, 1_000_000),
    metricsToken: env.METRICS_TOKEN || undefined,
    otelEndpoint: parseOtelEndpoint(env.OTEL_EXPORTER_OTLP_ENDPOINT, problems),
    otelServiceName: env.OTEL_SERVICE_NAME || 'tidegate',
    trustedDocuments: bool('TRUSTED_DOCUMENTS', false),
    planLimits,
    portOpsPerMinute: int('PORT_OPS_PER_MINUTE', 600, 1),
    sandboxPerMinute: int('SANDBOX_PER_MINUTE', 20, 1),
    sandboxKeyTtlMs: duration('SANDBOX_KEY_TTL', '24h'),
    sandboxMaxActiveKeys: int('SANDBOX_MAX_ACTIVE_KEYS', 10, 1, 1000),
    benchRoutes: bool('BENCH_ROUTES', false),
    graphqlMaxDepth: int('GRAPHQL_MAX_DEPTH', 12, 2, 100),
    graphqlMaxCost: int('GRAPHQL_MAX_COST', 20_000, 10),
    graphqlMaxTokens: int('GRAPHQL_MAX_TOKENS', 5_000, 500),
    graphqlDeadlineMs: int('GRAPHQL_DEADLINE_MS', 10_000, 10),
    answerCacheMb: int('ANSWER_CACHE_MB', 64, 0, 16_384),
    authSessionTtlMs: duration('AUTH_SESSION_TTL', '12h'),
    authLoginMaxFailures,
    authLoginMaxFailuresPerIp: int('AUTH_LOGIN_MAX_FAILURES_PER_IP', 10 * authLoginMaxFailures, 1),
    authClientMaxFailures,
    authClientMaxFailuresPerIp: int('AUTH_CLIENT_MAX_FAILURES_PER_IP', 10 * authClientMaxFailures, 1),
    authThrottleWindowMs: duration('AUTH_THROTTLE_WINDOW', '15m'),
    authDenyListRefreshMs: duration('AUTH_DENYLIST_REFRESH', '5s'),
    corsOrigins: parseCorsOrigins(env.CORS_ORIGINS, problems),
  };
  if (config.shutdownDrainMs >= config.shutdownGraceMs)
    problems.push(
      'SHUTDOWN_DRAIN_MS must be shorter than SHUTDOWN_GRACE (the drain is part of the shutdown)',
    );
  if (problems.length > 0) throw new ConfigError(problems);
  return config;
}

/** `https://app.example, http://localhost:5173` → exact origins (scheme, host, port: what a browser sends). */
function parseCorsOrigins(raw: string | undefined, problems: string[]): string[] {
  const entries = (raw ?? '')
    .split(',')
    .map((entry) => entry.trim())
    .filter(Boolean);
  for (const entry of entries) {
    if (entry === '*') continue;
    let origin: string | undefined;
    try {
      origin = new URL(entry).origin;
    } catch {
      origin = undefined;
    }
    if (origin !== entry.replace(/\/$/, '') || !/^https?:/.test(entry)) {
      problems.push(
        `CORS_ORIGINS: '${entry}' is not an origin (scheme://host[:port], no path), e.g. https://dashboard.example`,
      );
    }
  }
  return entries.map((entry) => entry.replace(/\/$/, ''));
}

function parseSubgraph(raw: string | undefined, problems: string[]): SubgraphName | undefined {
  const name = raw?.trim();
  if (!name) return undefined;
  if ((SUBGRAPH_NAMES as readonly string[]).includes(name)) return name as SubgraphName;
  problems.push(`SUBGRAPH must be one of ${SUBGRAPH_NAMES.join(', ')} (got '${raw}')`);
  return undefined;
}

const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'] as const;
const SQLITE_SYNCHRONOUS = ['normal', 'full'] as const;
export type SqliteSynchronous = (typeof SQLITE_SYNCHRONOUS)[number];

/** PostgreSQL connections a process's pool opens at most unless DATABASE_POOL_MAX says otherwise. */
export const DEFAULT_POOL_MAX = 10;

/** One of `values` (any case, trimmed); unset or empty: `fallback`. */
function parseChoice<T extends string>(
  name: string,
  raw: string | undefined,
  values: readonly T[],
  fallback: T,
  problems: string[],
): T {
  const value = raw?.trim().toLowerCase() || fallback;
  if ((values as readonly string[]).includes(value)) return value as T;
  problems.push(`${name} must be one of ${values.join(', ')} (got '${raw}')`);
  return fallback;
}

/** Names proxy-addr understands besides addresses and CIDR ranges. */
const PROXY_KEYWORDS = ['loopback', 'linklocal', 'uniquelocal'];

function isAddressOrRange(entry: string): boolean {
  if (PROXY_KEYWORDS.includes(entry)) return true;
  const [address, prefix, extra] = entry.split('/');
  const version = isIP(address ?? '');
  if (!version || extra !== undefined) return false;
  if (prefix === undefined) return true;
  const bits = Number(prefix);
  return /^\d+$/.test(prefix) && bits <= (version === 4 ? 32 : 128);
}

function parseTrustProxy(raw: string | undefined, problems: string[]): boolean | string {
  const value = raw?.trim() ?? '';
  if (value === '' || /^false$/i.test(value)) return false;
  if (/^true$/i.test(value)) return true;
  if (/^\d+$/.test(value)) {
    // Fastify 5 fails closed on a bare hop count (it cannot tell a proxy from a client that
    // forges X-Forwarded-For), so a number would silently trust nothing.
    problems.push(
      `TRUST_PROXY: a hop count ('${value}') is not supported; name the proxies instead (addresses, CIDR ranges or loopback/linklocal/uniquelocal), or true to trust every hop`,
    );
    return false;
  }
  const entries = value.split(',').map((e) => e.trim());
  const bad = entries.filter((e) => !isAddressOrRange(e));
  if (bad.length > 0) {
    problems.push(
      `TRUST_PROXY must be true, false, or addresses/CIDR ranges (or ${PROXY_KEYWORDS.join('/')}) separated by commas; not understood: ${bad.map((b) => `'${b}'`).join(', ')}`,
    );
    return false;
  }
  return entries.join(',');
}

function parseOtelEndpoint(raw: string | undefined, problems: string[]): string | undefined {
  const value = raw?.trim().replace(/\/+$/, '');
  if (!value) return undefined;
  if (!/^https?:\/\/[^/]/i.test(value)) {
    problems.push(`OTEL_EXPORTER_OTLP_ENDPOINT must be an http(s) URL (got '${raw}')`);
    return undefined;
  }
  return value;
}

/**
 * A yes-or-no env var: `true`/`false`, `1`/`0`, `yes`/`no`, `on`/`off` in any case; undefined when
 * unset or empty, 'invalid' for anything else (the caller names the variable in its error).
 */
export function parseFlag(raw: string | undefined): boolean | undefined | 'invalid' {
  const text = raw?.trim().toLowerCase();
  if (text === undefined || text === '') return undefined;
  if (['1', 'true', 'yes', 'on'].includes(text)) return true;
  if (['0', 'false', 'no', 'off'].includes(text)) return false;
  return 'invalid';
}

export function isPostgresUrl(url: string): boolean {
  return /^postgres(ql)?:\/\//i.test(url);
}
