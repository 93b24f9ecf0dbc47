import Fastify, { LogController, type FastifyInstance } from 'fastify';
import formbody from '@fastify/formbody';
import type { Config } from './config.js';
import { AuditWriter } from './audit/writer.js';
import { type Database } from './db/orm.js';
import { databaseOptionsOf, openAppDatabase } from './database.js';
import { startBackgroundCheckpoints } from './db/checkpoints.js';
import { ReadModelVersions } from './db/versions.js';
import { AccessPolicy } from './gateway/pipeline/access.js';
import { demandControl } from './gateway/pipeline/demand.js';
import { type Admission, type AppServices } from './gateway/schema/context.js';
import { apiCors, registerCors } from './gateway/doors/cors.js';
import { AccountCredentials } from './accounts/credentials.js';
import { ConnectionDrain } from './gateway/doors/drain.js';
import { registerEdge, requestIdOf } from './gateway/doors/edge/hooks.js';
import { frameworkRefusal, registerErrorHandlers } from './gateway/doors/edge/errors.js';
import { registerJsonBodyParser } from './gateway/doors/edge/json-body.js';
import { registerGraphQL } from './gateway/doors/graphql-http.js';
import { registerGraphQLWs, type WsServer } from './gateway/doors/graphql-ws.js';
import { Operations } from './gateway/pipeline/operation.js';
import { requestLoggerFactory } from './gateway/observability/request-logger.js';
import { createRateLimiter } from './gateway/pipeline/limits.js';
import { Metrics, poolSnapshot, registerMetricsRoute } from './gateway/observability/metrics.js';
import { gatewayOpenApi, registerOpenApiRoute } from './gateway/doors/openapi.js';
import { persistedOperations } from './gateway/pipeline/persisted.js';
import { Telemetry } from './gateway/observability/telemetry.js';
import { prepareRoutes, registerRestRoutes } from './gateway/doors/rest.js';
import { systemClock, type Clock } from './kernel/clock.js';
import { openSecretBox } from './kernel/secret-box.js';
import { MODULES, gatewaySchema, subgraph } from './modules.js';
import { isRunningAuth, type RunningAuth } from './auth/module.js';
import { createEventBus } from './events/bus.js';
import { observedPublisher } from './events/module.js';
import type { RunningModule } from './gateway/schema/module.js';
import { LiquidityReadModel } from './liquidity/read-model.js';
import { uploadSecretOf } from './port-ops/documents.js';
import { ReferenceRows } from './port-ops/reference-rows.js';
import { AccountCalls } from './port-ops/account-calls.js';
import { ChangeLog } from './port-ops/changes.js';
import { VesselCache } from './port-ops/vessel-cache.js';
import { registerPlayground } from './playground/http.js';

/**
 * The benchmark's floors: the same JSON as /v1/vessels/lookup?imo=9074729 from bare routes, with
 * nothing between the edge hooks and the answer. GET is the floor of a REST read; POST reads and
 * parses a JSON body first (through the same content-type parser as POST /graphql) and ignores it,
 * the floor of the GraphQL door.
 */
function registerBenchRoutes(fastify: FastifyInstance): void {
  // Byte-for-byte the body the shim answers for the demo vessel (the id is fixed here, random in the seed).
  const vessel = {
    id: 'f4175cb0-94da-4364-b0e7-ec75bdb38aa6',
    imo: '9074729',
    name: 'Northern Tern',
    flag: 'SG',
    type: 'TANKER',
    grossTonnage: 57164,
    deadweight: 105400,
    yearBuilt: 2009,
  };
  fastify.get('/bench/bare', async () => vessel);
  fastify.post('/bench/bare', async () => vessel);
}

export interface App {
  fastify: FastifyInstance;
  services: AppServices;
  ws: WsServer;
  /** The running authorization server (its housekeeping and signing keys). */
  auth: RunningAuth['runtime'];
  /** Listens on the configured host/port (port 0 picks a free one); returns the base URL. */
  listen(): Promise<string>;
  /** Graceful: stop accepting, finish in-flight requests, close sockets with 1001, flush, close the DB. */
  close(): Promise<void>;
}

export interface AppOptions {
  clock?: Clock;
  /** Reuse an open database (tests); otherwise one is opened from config and migrated. */
  db?: Database;
  logger?: boolean;
  /** Replaces the rate limiter built from config (tests that need another budget). */
  admission?: Admission;
  /** Replaces the tracing built from config (tests export spans to memory). */
  telemetry?: Telemetry;
}

export async function buildApp(config: Config, options: AppOptions = {}): Promise<App> {
  const clock = options.clock ?? systemClock;
  const db = options.db ?? (await openAppDatabase(config.databaseUrl, databaseOptionsOf(config)));
  if (!options.db) await db.migrate();

  const metrics = new Metrics();
  const telemetry = options.telemetry ?? (await Telemetry.create(config));
  telemetry.traceStatements(db);
  metrics.observePool(() => poolSnapshot(db));
  const fastify = Fastify({
    logger: options.logger === false ? false : { level: config.logLevel },
    // The edge logs one line per request with its operation and caller instead.
    logController: new LogController({ disableRequestLogging: true }),
    childLoggerFactory: requestLoggerFactory,
    trustProxy: config.trustProxy,
    genReqId: (req) => requestIdOf(req.headers['x-request-id']),
    bodyLimit: 1024 * 1024,
    forceCloseConnections: 'idle',
    return503OnClosing: true,
    frameworkErrors: frameworkRefusal,
  });
  const connections = new ConnectionDrain(fastify.server);
  await fastify.register(formbody);
  registerJsonBodyParser(fastify);
  // No API takes text/plain; without a parser such bodies get a clean 415.
  fastify.removeContentTypeParser('text/plain');

  if (config.benchRoutes) registerBenchRoutes(fastify);

  // SUBGRAPH=<name>: only that part of the schema, as an Apollo Federation 2 subgraph behind a
  // router; everything below (credentials, admission, audit, the pipeline) is the same.
  const schema = config.subgraph ? subgraph(config.subgraph).schema : gatewaySchema();
  const policy = new AccessPolicy(schema);
  const credentials = new AccountCredentials(db, clock, config.credentialCacheTtlMs);
  const limiter = options.admission
    ? undefined
    : await createRateLimiter(config, clock, fastify.log, metrics);
  const persisted = await persistedOperations(config, fastify.log);
  const audit = new AuditWriter(db, (e) => fastify.log.error({ err: e }, 'audit write failed'));
  // The live bus of this process (across processes through Redis when REDIS_URL is set).
  const bus = await createEventBus(config, fastify.log);
  const secrets = openSecretBox(config);
  const versions = new ReadModelVersions(db, { url: config.databaseUrl, logger: fastify.log });
  const changes = new ChangeLog();
  const services: AppServices = {
    config,
    db,
    versions,
    clock,
    logger: fastify.log,
    admission: options.admission ?? limiter!,
    events: observedPublisher(bus, metrics),
    bus,
    credentials,
    audit,
    policy,
    validationRules: [demandControl({ maxDepth: config.graphqlMaxDepth, maxCost: config.graphqlMaxCost })],
    secrets,
    metrics,
    telemetry,
    persisted,
    // Domain state the resolvers reach through their context (each declared by its domain).
    readModel: new LiquidityReadModel(db, versions, fastify.log, config.readModelPollMs),
    vessels: new VesselCache(clock),
    referenceRows: new ReferenceRows(versions),
    portOpsChanges: changes,
    accountCalls: new AccountCalls(versions, changes),
    documentUploadSecret: uploadSecretOf(config, secrets),
  };
  // PostgreSQL: listen for version notices before serving, so that warm reads start from memory.
  await versions.start();
  // SQLite: WAL checkpoints run on a worker thread, not inside a request's commit (src/db/checkpoints.ts).
  // Started last before the modules, so every failure after it goes through the cleanup below.
  const checkpoints = await startBackgroundCheckpoints(db, (e) =>
    fastify.log.error({ err: e }, 'SQLite checkpoint worker failed'),
  ).catch((e: unknown) => {
    fastify.log.warn({ err: e }, 'SQLite checkpoints stay on the serving connection');
    return undefined;
  });
  // SQLite: audit rows are inserted by a worker thread, not on the serving connection (src/audit/worker.ts).
  await audit.start().catch((e: unknown) => {
    fastify.log.warn({ err: e }, 'SQLite audit rows stay on the serving connection');
  });
  // Modules start in the order of MODULES and stop in reverse; what each runs is kept here.
  const running: RunningModule[] = [];
  const stopModules = async () => {
    for (const module of running.splice(0).reverse()) await module.stop?.();
  };
  let auth: RunningAuth | undefined;
  try {
    for (const module of MODULES) {
      if (module.start) running.push(await module.start(services));
    }
    auth = running.find(isRunningAuth);
    if (!auth) throw new Error('the auth module is not among MODULES: the gateway cannot verify tokens');
  } catch (e) {
    // A start that fails (e.g. a wrong SECRETS_KEY) must not leave connections behind.
    await stopModules();
    await bus.close();
    await limiter?.close();
    await audit.close();
    await checkpoints?.stop();
    await versions.stop();
    if (!options.db) await db.close();
    throw e;
  }

  registerErrorHandlers(fastify);
  registerEdge(fastify, credentials, audit, clock, { metrics, telemetry });
  const cors = config.corsOrigins.length > 0 ? registerCors(fastify, apiCors(config.corsOrigins)) : undefined;
  registerMetricsRoute(fastify, metrics, config.metricsToken);
  // The REST shims, OpenAPI, OAuth endpoints, console and playground read the whole schema: a
  // subgraph serves GraphQL only, and the whole gateway beside it keeps serving them.
  const whole = !config.subgraph;
  if (whole) {
    await registerPlayground(fastify, services);
    registerOpenApiRoute(fastify, gatewayOpenApi(schema, policy, MODULES));
  }

  let closing = false;
  fastify.get('/healthz', async () => ({ status: 'ok' }));
  fastify.get('/readyz', async (_request, reply) => {
    const ok = !closing && (await db.ping());
    return reply
      .code(ok ? 200 : 503)
      .send({ status: ok ? 'ready' : 'unavailable', database: ok ? 'ok' : 'unreachable' });
  });

  // The one pipeline; every door below is a thin adapter over it.
  const operations = new Operations(
    schema,
    policy,
    services,
    MODULES.flatMap((m) => (m.answers ? [m.answers] : [])),
  );
  const apollo = await registerGraphQL(fastify, operations, services);
  if (whole) {
    registerRestRoutes(
      fastify,
      operations,
      prepareRoutes(
        operations,
        MODULES.flatMap((m) => m.restRoutes ?? []),
      ),
    );
    for (const module of MODULES) await module.http?.(fastify, services, operations);
    for (const module of running) await module.http?.(fastify, operations);
  }
  cors?.answerPreflights();
  const ws = registerGraphQLWs(fastify, operations, services, credentials, audit);
  metrics.observeSockets(() => ({ connections: ws.connectionCount, subscriptions: ws.subscriptionCount }));

  return {
    fastify,
    services,
    ws,
    auth: auth.runtime,
    async listen() {
      await fastify.listen({ port: config.port, host: config.host });
      const address = fastify.server.address();
      const port = typeof address === 'object' && address ? address.port : config.port;
      const host = config.host.includes(':') ? `[${config.host}]` : config.host;
      return `http://${host}:${port}`;
    },
    async close() {
      closing = true;
      await connections.drain(config.shutdownDrainMs);
      await ws.close();
      // Apollo's drain plugin closes Fastify: no new connections, in-flight requests finish.
      await apollo.stop();
      await stopModules();
      await bus.close();
      await audit.close();
      await credentials.flushLastUsed();
      await limiter?.close();
      await telemetry.shutdown();
      await persisted.close();
      await checkpoints?.stop();
      await versions.stop();
      if (!options.db) await db.close();
    },
  };
}
