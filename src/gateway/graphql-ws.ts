import type { IncomingMessage } from 'node:http';
import { performance } from 'node:perf_hooks';
import type { Duplex } from 'node:stream';
import proxyAddr from '@fastify/proxy-addr';
import type { FastifyInstance } from 'fastify';
import {
  GraphQLError,
  createSourceEventStream,
  parse,
  specifiedRules,
  validate,
  type DocumentNode,
  type ExecutionResult,
  type GraphQLSchema,
} from 'graphql';
import { compileQuery, isCompiledQuery, type CompiledQuery } from 'graphql-jit';
import { useServer, type Extra } from 'graphql-ws/use/ws';
import { WebSocketServer, type WebSocket } from 'ws';
import type { Config } from '../config.js';
import { AppError, isAppError } from '../kernel/errors.js';
import { isPromise } from '../kernel/maybe-async.js';
import type { Principal } from '../kernel/principal.js';
import type { AuditWriter } from '../audit/writer.js';
import { eventBusOf } from '../events/bus.js';
import { isLiveEvents, type LiveEvents } from '../events/live.js';
import { CREDENTIAL_REVOKED } from '../events/catalog.js';
import { checkAccess, type AccessPolicy } from './access.js';
import { createContext, type AppServices, type DomainEvent, type GatewayContext } from './context.js';
import type { CredentialResolver } from './credentials.js';
import { appErrorOf, formatGraphQLError, toGraphQLError } from './errors.js';
import { requestIdOf } from './edge.js';
import { combineDenials } from './graphql-http.js';

/** graphql-ws close codes we use beyond the protocol's own. */
export const CLOSE_UNAUTHORIZED = 4401;
export const CLOSE_FORBIDDEN = 4403;

interface ConnectionState {
  principal: Principal;
  requestId: string;
  ip: string;
  userAgent?: string;
  /** Subscriptions holding a slot of the per-connection cap; a slot is taken before any await. */
  active: Set<string>;
  /** Started operations whose audit record waits for the subscribe function's verdict. */
  starting: Map<string, { operation: string; startedAt: number }>;
  expiryTimer?: NodeJS.Timeout;
}

type WsExtra = Extra & { state?: ConnectionState } & Record<PropertyKey, unknown>;

/** `{"authorization": "Bearer …"}` or `{"apiKey": "…"}` in the connection_init payload. */
export function credentialFromInit(payload: Record<string, unknown> | undefined): string | null {
  if (!payload) return null;
  const auth = payload.authorization ?? payload.Authorization;
  if (typeof auth === 'string') return /^Bearer\s+(\S+)$/i.exec(auth.trim())?.[1] ?? null;
  const key = payload.apiKey ?? payload['x-api-key'];
  return typeof key === 'string' && key.length > 0 ? key : null;
}

/**
 * The client's address by the same TRUST_PROXY rule as Fastify's `request.ip` on the HTTP routes
 * (Fastify 5 builds it the same way from @fastify/proxy-addr).
 */
function clientAddressOf(trustProxy: Config['trustProxy']): (request: IncomingMessage) => string {
  if (trustProxy === false) return (request) => request.socket.remoteAddress ?? '';
  const trust =
    trustProxy === true ? () => true : proxyAddr.compile(trustProxy.split(',').map((entry) => entry.trim()));
  return (request) => proxyAddr(request, trust);
}

export interface WsServer {
  /** Closes every socket with 1001 and stops accepting upgrades. */
  close(): Promise<void>;
  /** Ends every connection authenticated by this credential (revocation): close 4403. */
  endCredential(credentialId: string): void;
  /** Authenticated connections this server tracks (each one open). */
  readonly connectionCount: number;
}

export function registerGraphQLWs(
  app: FastifyInstance,
  schema: GraphQLSchema,
  policy: AccessPolicy,
  services: AppServices,
  credentials: CredentialResolver,
  audit: AuditWriter,
): WsServer {
  const wss = new WebSocketServer({ noServer: true, maxPayload: 1024 * 1024 });
  const connections = new Map<WebSocket, ConnectionState>();
  const documents = new Map<string, DocumentNode>();
  // Subscription documents are compiled once (graphql-jit): each event is executed for thousands of subscribers.
  const compiled = new WeakMap<DocumentNode, Map<string, CompiledQuery | readonly GraphQLError[]>>();
  /** Per event: the serialized answer for each subscriber key, computed once for all of them. */
  const sharedAnswers = new WeakMap<DomainEvent, Map<string, string | Promise<string>>>();
  /** The socket and subscription id a subscription's context belongs to (set in onSubscribe). */
  const liveTargets = new WeakMap<GatewayContext, { socket: WebSocket; id: string }>();
  const formatError = (error: GraphQLError) =>
    formatGraphQLError(error.toJSON(), error, (e) =>
      services.logger.error({ err: e }, 'unexpected error in a subscription'),
    );
  const serialize = (result: ExecutionResult) =>
    JSON.stringify(result.errors ? { ...result, errors: result.errors.map(formatError) } : result);
  const documentIds = new WeakMap<DocumentNode, number>();
  let nextDocumentId = 0;
  const documentId = (document: DocumentNode): number => {
    let id = documentIds.get(document);
    if (id === undefined) documentIds.set(document, (id = nextDocumentId++));
    return id;
  };
  const compiledFor = (document: DocumentNode, operationName: string | null | undefined) => {
    let perDocument = compiled.get(document);
    if (!perDocument) compiled.set(document, (perDocument = new Map()));
    const key = operationName ?? '';
    let entry = perDocument.get(key);
    if (!entry) {
      const result = compileQuery(schema, document, operationName ?? undefined);
      entry = isCompiledQuery(result) ? result : (result.errors ?? []);
      perDocument.set(key, entry);
    }
    return entry;
  };

  app.server.on('upgrade', (req: IncomingMessage, socket, head) => {
    const path = (req.url ?? '').split('?')[0];
    if (path !== '/graphql') {
      socket.destroy();
      return;
    }
    wss.handleUpgrade(req, socket, head, (ws) => {
      coalesceWrites(ws, socket);
      wss.emit('connection', ws, req);
    });
  });

  const parseCached = (query: string): DocumentNode | readonly GraphQLError[] => {
    const cached = documents.get(query);
    if (cached) return cached;
    let document: DocumentNode;
    try {
      document = parse(query);
    } catch (e) {
      return [e as GraphQLError];
    }
    const errors = validate(schema, document, [...specifiedRules, ...services.validationRules]);
    if (errors.length > 0) return errors;
    if (documents.size > 1000) documents.clear();
    documents.set(query, document);
    return document;
  };

  const clientAddress = clientAddressOf(services.config.trustProxy);
  /** One audit record per operation started on a socket, like one per HTTP request. */
  const recordStart = (state: ConnectionState, operation: string, status: number, startedAt: number) =>
    audit.record({
      at: services.clock.now(),
      requestId: state.requestId,
      accountId: state.principal.accountId,
      credentialKind: state.principal.credential.kind,
      credentialId: state.principal.credential.id,
      ip: state.ip,
      userAgent: state.userAgent,
      operation: `ws ${operation}`,
      status,
      durationMs: performance.now() - startedAt,
    });

  const server = useServer<Record<string, unknown> | undefined, WsExtra>(
    {
      schema,
      subscribe: async (args) => {
        const query = compiledFor(args.document, args.operationName);
        if (!('query' in query)) return { errors: [...query] };
        const source = await createSourceEventStream(args);
        // A subscribe function's AppError (bad argument) keeps its code, as on every other door.
        if (!(Symbol.asyncIterator in source)) {
          return { errors: source.errors?.map(keepAppErrorCode) };
        }
        const variables = args.variableValues ?? {};
        const context = args.contextValue as GatewayContext;
        const target = liveTargets.get(context);
        if (!isLiveEvents(source) || !target)
          throw new Error('subscription sources must be live event streams');
        // Subscribers with the same document, variables and account get the same answer to an event:
        // execute and serialize it once for all of them (thousands of dashboards watch the same feed).
        const key = `${documentId(args.document)}|${args.operationName ?? ''}|${context.principal?.accountId ?? ''}|${JSON.stringify(variables)}`;
        const answerTo = (event: DomainEvent): string | Promise<string> => {
          let answers = sharedAnswers.get(event);
          if (!answers) sharedAnswers.set(event, (answers = new Map()));
          let answer = answers.get(key);
          if (answer === undefined) {
            const result = query.query(event, context, variables);
            answer = isPromise(result) ? result.then(serialize) : serialize(result);
            answers.set(key, answer);
          }
          return answer;
        };
        return pushToSocket(source, target, answerTo, services.config.wsMaxBacklogBytes);
      },
      onConnect: async (ctx) => {
        const socket = ctx.extra.socket;
        const secret = credentialFromInit(ctx.connectionParams);
        const principal = secret ? await credentials.resolve(secret) : null;
        // The client may have left while its credential was checked: onClose has run already, so
        // state kept now would never be removed.
        if (socket.readyState !== socket.OPEN) return false;
        if (!principal) {
          socket.close(CLOSE_UNAUTHORIZED, 'Unauthorized');
          return false;
        }
        const state: ConnectionState = {
          principal,
          requestId: requestIdOf(ctx.extra.request.headers['x-request-id']),
          ip: clientAddress(ctx.extra.request),
          userAgent: ctx.extra.request.headers['user-agent'],
          active: new Set(),
          starting: new Map(),
        };
        const expiresAt = principal.credential.expiresAt;
        if (expiresAt) {
          const ms = Math.max(0, expiresAt.getTime() - services.clock.now().getTime());
          state.expiryTimer = setTimeout(
            () => socket.close(CLOSE_FORBIDDEN, 'Credential expired'),
            Math.min(ms, 2 ** 31 - 1),
          );
          state.expiryTimer.unref();
        }
        ctx.extra.state = state;
        connections.set(socket, state);
        return true;
      },
      onSubscribe: async (ctx, id, payload) => {
        const state = ctx.extra.state;
        if (!state) return [new GraphQLError('Unauthorized', { extensions: { code: 'UNAUTHENTICATED' } })];
        const startedAt = performance.now();
        const parsed = parseCached(payload.query);
        if (!('kind' in parsed)) {
          // Like a malformed POST /graphql: audited under the door's name, status 400.
          recordStart(state, 'graphql', 400, startedAt);
          return parsed;
        }
        let operation = 'subscription';
        let reserved = false;
        try {
          const requirements = policy.requirements(parsed, payload.operationName);
          operation = `${requirements.operationType} ${requirements.operationName ?? '(anonymous)'}`;
          const denied = checkAccess(requirements, state.principal);
          if (denied.length > 0) throw combineDenials(denied);
          // graphql-ws handles a connection's messages concurrently: the slot is taken before the
          // first await, or simultaneous subscribes would all pass the check.
          if (state.active.size >= services.config.wsMaxSubscriptionsPerConnection) {
            throw new AppError(
              'RATE_LIMIT_EXCEEDED',
              `At most ${services.config.wsMaxSubscriptionsPerConnection} subscriptions per connection`,
            );
          }
          state.active.add(id);
          reserved = true;
          await services.admission.admit(state.principal, requirements);
          state.starting.set(id, { operation, startedAt });
          const contextValue = createContext(services, state.requestId, state.principal);
          liveTargets.set(contextValue, { socket: ctx.extra.socket, id });
          return {
            schema,
            document: parsed,
            variableValues: payload.variables ?? undefined,
            operationName: payload.operationName ?? undefined,
            contextValue,
          };
        } catch (e) {
          if (reserved) state.active.delete(id);
          if (!isAppError(e)) throw e;
          recordStart(state, operation, e.status, startedAt);
          return [toGraphQLError(e)];
        }
      },
      // The subscribe function may still refuse (a bad argument): the audit records its verdict.
      onOperation: (ctx, id, _payload, _args, result) => {
        const state = ctx.extra.state;
        const start = state?.starting.get(id);
        if (!state || !start) return;
        state.starting.delete(id);
        recordStart(state, start.operation, startStatus(result), start.startedAt);
      },
      onComplete: (ctx, id) => {
        ctx.extra.state?.active.delete(id);
      },
      onClose: (ctx) => {
        const state = ctx.extra.state;
        if (state?.expiryTimer) clearTimeout(state.expiryTimer);
        connections.delete(ctx.extra.socket);
      },
    },
    wss,
    services.config.wsKeepAliveMs,
  );

  const endCredential = (credentialId: string) => {
    for (const [socket, state] of connections) {
      if (state.principal.credential.id === credentialId) socket.close(CLOSE_FORBIDDEN, 'Credential revoked');
    }
  };
  // Revocations reach every process through the bus (OAuth revocation, API keys noticed by the key watch).
  const stopListening = eventBusOf(services)?.subscribe((event) => {
    if (event.type === CREDENTIAL_REVOKED)
      endCredential(String((event.payload as { credentialId?: unknown }).credentialId));
  });

  return {
    async close() {
      stopListening?.();
      await server.dispose();
    },
    endCredential,
    get connectionCount() {
      return connections.size;
    },
  };
}

/**
 * What an operation start is audited with: a stream or an execution result is a success (as over
 * HTTP, field errors keep 200); an answer without `data` is a refusal before execution — the
 * AppError's status, 400 for GraphQL's own request errors (e.g. variables), 500 for anything else.
 */
function startStatus(result: unknown): number {
  if (typeof result !== 'object' || result === null) return 200;
  if (Symbol.asyncIterator in result || 'data' in result) return 200;
  const error = (result as { errors?: readonly GraphQLError[] }).errors?.[0];
  const app = appErrorOf(error);
  if (app) return app.status;
  return error && !error.originalError ? 400 : 500;
}

function keepAppErrorCode(error: GraphQLError): GraphQLError {
  const app = appErrorOf(error);
  return app ? toGraphQLError(app) : error;
}

/**
 * Delivers a subscription by writing its `next` frames straight to the socket: the frame is the
 * shared serialized answer with this subscription's id around it, so the per-subscriber cost is a
 * string join and a send — not an iterator step, a promise chain and a JSON.stringify each, as
 * when graphql-ws pulls. graphql-ws still owns the subscription: it gets an iterator that yields
 * nothing until the subscription ends (client `complete` or socket close: return() stops the
 * feed), or one final error when the subscriber falls too far behind.
 */
function pushToSocket(
  source: LiveEvents,
  { socket, id }: { socket: WebSocket; id: string },
  answerTo: (event: DomainEvent) => string | Promise<string>,
  maxBacklogBytes: number,
): AsyncIterableIterator<ExecutionResult> {
  const head = `{"id":${JSON.stringify(id)},"type":"next","payload":`;
  let ended = false;
  let finalResult: ExecutionResult | undefined;
  let parked: ((result: IteratorResult<ExecutionResult>) => void) | undefined;
  // Answers that need a promise keep their order behind one chain.
  let pending: Promise<void> | undefined;

  const end = (result?: ExecutionResult) => {
    if (ended) return;
    ended = true;
    void source.return?.();
    if (!parked) {
      finalResult = result;
      return;
    }
    const resolve = parked;
    parked = undefined;
    resolve(result ? { value: result, done: false } : { value: undefined, done: true });
  };
  const send = (json: string) => {
    if (ended || socket.readyState !== socket.OPEN) return;
    if (socket.bufferedAmount > maxBacklogBytes) {
      end({
        errors: [
          new GraphQLError('Subscriber fell too far behind; subscription ended', {
            extensions: { code: 'SERVICE_UNAVAILABLE' },
          }),
        ],
      });
      return;
    }
    socket.send(head + json + '}');
  };

  source.pushTo((event) => {
    if (ended || socket.readyState !== socket.OPEN) return;
    const answer = answerTo(event);
    if (!pending && !isPromise(answer)) return send(answer);
    const previous = pending ?? Promise.resolve();
    const current = previous.then(() => answer).then(send, () => undefined);
    pending = current;
    void current.then(() => {
      if (pending === current) pending = undefined;
    });
  });

  const iterator: AsyncIterableIterator<ExecutionResult> = {
    next() {
      if (finalResult) {
        const value = finalResult;
        finalResult = undefined;
        return Promise.resolve({ value, done: false });
      }
      if (ended) return Promise.resolve({ value: undefined, done: true });
      return new Promise((resolve) => (parked = resolve));
    },
    return() {
      end();
      return Promise.resolve({ value: undefined, done: true });
    },
    throw(error?: unknown) {
      end();
      return Promise.reject(error);
    },
    [Symbol.asyncIterator]() {
      return iterator;
    },
  };
  return iterator;
}

/**
 * One event fans out to every subscription of a connection within the same turn of the event
 * loop; corking the socket for that turn sends those frames in one write instead of one syscall
 * each (measured: writev was the largest single cost at thousands of subscribers).
 */
function coalesceWrites(ws: WebSocket, socket: Duplex): void {
  const send = ws.send.bind(ws) as (...args: unknown[]) => void;
  let corked = false;
  ws.send = ((...args: unknown[]) => {
    if (!corked) {
      corked = true;
      socket.cork();
      setImmediate(() => {
        corked = false;
        socket.uncork();
      });
    }
    send(...args);
  }) as typeof ws.send;
}
