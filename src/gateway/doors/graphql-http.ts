import { ApolloServer, HeaderMap, type ApolloServerPlugin, type GraphQLResponse } from '@apollo/server';
import {
  ApolloServerPluginCacheControlDisabled,
  ApolloServerPluginInlineTraceDisabled,
  ApolloServerPluginLandingPageDisabled,
} from '@apollo/server/plugin/disabled';
import { fastifyApolloDrainPlugin, fastifyApolloHandler } from '@as-integrations/fastify';
import type { FastifyInstance, FastifyReply, FastifyRequest, RouteHandlerMethod } from 'fastify';
import Negotiator from 'negotiator';
import { AppError } from '../../kernel/errors.js';
import { andThen, isPromise, type MaybePromise } from '../../kernel/maybe-async.js';
import { Lru } from '../../kernel/lru.js';
import { bodyOf } from '../pipeline/answers.js';
import type { AppServices, OperationMeta } from '../schema/context.js';
import { formatGraphQLError } from '../pipeline/errors.js';
import type { Answer, Operations, Prepared } from '../pipeline/operation.js';

/**
 * GraphQL over HTTP has two doors onto the one pipeline (src/gateway/pipeline/operation.ts), chosen by the
 * request's shape alone:
 *
 * - the thin door: POST, `Content-Type: application/json`, a body with a non-empty `query`, no
 *   `extensions`, and an Accept header we can answer — what Apollo Client, urql and Relay send.
 *   It calls `prepare` and `run` and writes the answer itself.
 * - Apollo Server 5 for everything else (GET, persisted-query extensions, malformed bodies, CSRF
 *   checks, unusual Accept headers): it implements the GraphQL-over-HTTP protocol, and its
 *   `responseForOperation` hook hands the operation to the same `prepare` and `run`.
 *
 * Both serialize the same way (Apollo's field order and trailing newline), so the door never
 * shows in an answer. The thin door exists because it is measured several times faster than
 * Apollo's per-request pipeline for the same work (test/bench/README.md: the plain Apollo Server anchor).
 */

interface HttpContext {
  request: FastifyRequest;
}

const MEDIA_TYPES = ['application/json; charset=utf-8', 'application/graphql-response+json; charset=utf-8'];
/** Accept headers seen, with the media type chosen: clients send a few, the bound keeps it so. */
const negotiated = new Lru<string, string | null>({ maxEntries: 100 });

/** Apollo's choice of response media type for a single result, memoised per Accept header. */
function responseType(accept: string | undefined): string | null {
  if (!accept) return MEDIA_TYPES[0]!;
  let type = negotiated.get(accept);
  if (type === undefined) {
    type = new Negotiator({ headers: { accept } }).mediaType(MEDIA_TYPES) ?? null;
    negotiated.set(accept, type);
  }
  return type;
}

/** An operation over HTTP: one execution; subscriptions belong to the WebSocket door. */
function answerOverHttp(
  operations: Operations,
  prepared: Prepared,
  request: FastifyRequest,
  variables: Record<string, unknown> | undefined,
): MaybePromise<Answer> {
  const meta: OperationMeta = { headers: {} };
  request.gatewayMeta = meta;
  if (prepared.kind === 'rejected') {
    meta.errorCodes = [...prepared.codes];
    return { status: prepared.status, headers: meta.headers, body: prepared.body };
  }
  if (prepared.operationType === 'subscription') {
    meta.operation = prepared.label;
    const error = new AppError(
      'BAD_USER_INPUT',
      'Subscriptions are served over WebSocket (graphql-transport-ws) at /graphql, not over HTTP',
    );
    meta.errorCodes = [error.code];
    return {
      status: error.status,
      headers: meta.headers,
      body: { errors: [{ message: error.message, extensions: { code: error.code } }] },
    };
  }
  return operations.run(prepared, {
    principal: request.principal ?? null,
    requestId: request.id,
    variables,
    meta,
  });
}

/**
 * A federation subgraph answers every GraphQL response with 200, as GraphQL over HTTP asks of
 * application/json: routers (Apollo Gateway and Router) read a subgraph's errors only from a 2xx
 * body and turn any other status into a transport failure, losing the error's code. The headers
 * (Retry-After, X-RateLimit-*) stay; the whole gateway keeps a status per error code.
 */
function answerAsSubgraph(...args: Parameters<typeof answerOverHttp>): MaybePromise<Answer> {
  return andThen(answerOverHttp(...args), (answer) =>
    answer.status === 200 ? answer : { ...answer, status: 200 },
  );
}

type Answerer = typeof answerOverHttp;

/** Hands Apollo's parsed and validated operation to the pipeline instead of Apollo's executor. */
function pipelinePlugin(operations: Operations, answerOverHttp: Answerer): ApolloServerPlugin<HttpContext> {
  return {
    async requestDidStart() {
      return {
        async responseForOperation(rc): Promise<GraphQLResponse> {
          const prepared = operations.prepare(rc.source, rc.request.operationName);
          const answer = await answerOverHttp(
            operations,
            prepared,
            rc.contextValue.request,
            rc.request.variables as Record<string, unknown> | undefined,
          );
          const headers = new HeaderMap();
          for (const [name, value] of Object.entries(answer.headers)) headers.set(name.toLowerCase(), value);
          return {
            http: { status: answer.status, headers },
            body: { kind: 'single', singleResult: answer.body },
          };
        },
      };
    },
  };
}

interface GraphQLBody {
  query?: unknown;
  operationName?: unknown;
  variables?: unknown;
  extensions?: unknown;
}

/** The thin door's shape test: what it can answer exactly as Apollo would. */
function thinDoorRequest(
  request: FastifyRequest,
): { query: string; operationName?: string; variables?: Record<string, unknown>; type: string } | undefined {
  if (request.method !== 'POST') return undefined;
  const body = request.body as GraphQLBody | undefined;
  if (!body || typeof body !== 'object' || Array.isArray(body)) return undefined;
  if (typeof body.query !== 'string' || body.query === '' || body.extensions !== undefined) return undefined;
  const operationName = body.operationName;
  if (operationName !== undefined && operationName !== null && typeof operationName !== 'string')
    return undefined;
  const variables = body.variables;
  if (
    variables !== undefined &&
    variables !== null &&
    (typeof variables !== 'object' || Array.isArray(variables))
  )
    return undefined;
  const type = responseType(request.headers.accept);
  if (!type) return undefined;
  return {
    query: body.query,
    operationName: operationName ?? undefined,
    variables: (variables ?? undefined) as Record<string, unknown> | undefined,
    type,
  };
}

function send(reply: FastifyReply, type: string, answer: Answer): void {
  reply.code(answer.status).headers(answer.headers).header('content-type', type);
  // Apollo's serialization: errors, data, extensions, and a trailing newline.
  reply.send(bodyOf(answer.body, '\n'));
}

/** Headers a browser sends cross-site only after a CORS preflight (Apollo's CSRF list). */
const PREFLIGHT_HEADERS = ['apollo-require-preflight', 'x-apollo-operation-name'] as const;
/** Content types a cross-site form or `fetch` may send without a preflight. */
const SIMPLE_TYPES = new Set(['application/x-www-form-urlencoded', 'multipart/form-data', 'text/plain']);

/**
 * CSRF prevention for GET: a cross-site request can only ride on the browser's cookies, so a GET that
 * carries none (urql's default, a server, curl — credentials in headers) is served as it is; one that
 * carries cookies needs a header or content type that forces a preflight, as Apollo's own check wants.
 * Mutations over GET stay refused (405) whatever the headers.
 */
function crossSiteGet(request: FastifyRequest): AppError | undefined {
  if (request.headers.cookie === undefined) return undefined;
  if (PREFLIGHT_HEADERS.some((name) => request.headers[name])) return undefined;
  const type = request.headers['content-type']?.split(';')[0]!.trim().toLowerCase();
  if (type && !SIMPLE_TYPES.has(type)) return undefined;
  return new AppError(
    'BAD_USER_INPUT',
    `This operation has been blocked as a potential Cross-Site Request Forgery (CSRF): a GET /graphql that carries cookies needs a non-empty ${PREFLIGHT_HEADERS.join(' or ')} header`,
  );
}

/**
 * GraphQL over HTTP: a GET with cookies must force a preflight (above); a POST body must be
 * application/json, anything else is 415 before parsing.
 */
function guardRequest(request: FastifyRequest, _reply: FastifyReply, done: (error?: Error) => void): void {
  if (request.method === 'GET') return done(crossSiteGet(request));
  if (request.method !== 'POST') return done();
  const header = request.headers['content-type'];
  if (header === 'application/json') return done(); // the common spelling, without parsing it
  const type = (header ?? '').split(';')[0]!.trim().toLowerCase();
  if (type === 'application/json') return done();
  done(
    new AppError(
      'UNSUPPORTED_MEDIA_TYPE',
      `POST /graphql needs Content-Type: application/json (got '${type || 'none'}')`,
    ),
  );
}

export async function registerGraphQL(
  app: FastifyInstance,
  operations: Operations,
  services: AppServices,
): Promise<ApolloServer<HttpContext>> {
  const answer: Answerer = services.config.subgraph ? answerAsSubgraph : answerOverHttp;
  const apollo = new ApolloServer<HttpContext>({
    schema: operations.schema,
    introspection: true,
    // Our own, narrower check runs before Apollo (guardRequest): Apollo's refuses every GET without a
    // preflight header, cookies or not, which is urql's default configuration.
    csrfPrevention: false,
    // main.ts owns the signals: Apollo's own handlers would re-raise them and kill in-flight requests.
    stopOnTerminationSignals: false,
    validationRules: services.validationRules,
    // The pipeline's LRU is the one document cache; Apollo only parses what reaches its door.
    documentStore: null,
    parseOptions: { maxTokens: services.config.graphqlMaxTokens },
    persistedQueries: { cache: services.persisted.cache },
    includeStacktraceInErrorResponses: false,
    plugins: [
      fastifyApolloDrainPlugin(app),
      pipelinePlugin(operations, answer),
      ApolloServerPluginCacheControlDisabled(),
      ApolloServerPluginLandingPageDisabled(),
      // Apollo turns federated traces on by itself when the schema has `_service` (a subgraph); the
      // pipeline's own spans (observability/telemetry.ts) are the traces.
      ApolloServerPluginInlineTraceDisabled(),
    ],
    formatError: (formatted, error) =>
      formatGraphQLError(formatted, error, (e) =>
        services.logger.error({ err: e }, 'unexpected GraphQL error'),
      ),
  });
  await apollo.start();
  // Apollo's handler types its reply payload as a string; it takes any request of this route.
  const apolloHandler = fastifyApolloHandler(apollo, {
    context: async (request) => ({ request }),
  }) as unknown as RouteHandlerMethod;

  app.route({
    method: ['GET', 'POST'],
    url: '/graphql',
    onRequest: guardRequest,
    // A 401 names the scheme to use (RFC 9110 §11.6.1), as on /v1: the edge adds it when a presented
    // credential is refused; here when none was presented and the operation needed one.
    onSend(_request, reply, payload, done) {
      if (reply.statusCode === 401 && !reply.hasHeader('www-authenticate'))
        reply.header('www-authenticate', 'Bearer realm="tidegate"');
      done(null, payload);
    },
    handler(request, reply) {
      const thin = thinDoorRequest(request);
      if (!thin) return apolloHandler.call(this, request, reply);
      const prepared = operations.prepare(thin.query, thin.operationName);
      const answered = answer(operations, prepared, request, thin.variables);
      if (!isPromise(answered)) return send(reply, thin.type, answered);
      return andThen(answered, (a) => send(reply, thin.type, a));
    },
    config: { audit: 'graphql', graphql: true },
  });
  app.route({
    method: ['PUT', 'PATCH', 'DELETE', 'OPTIONS'],
    url: '/graphql',
    config: { graphql: true },
    handler: async (request) => {
      throw new AppError(
        'METHOD_NOT_ALLOWED',
        `${request.method} is not supported on /graphql; use GET for queries or POST`,
        {},
        { allow: 'GET, POST' },
      );
    },
  });
  return apollo;
}
