import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import {
  GraphQLError,
  createSourceEventStream,
  parse,
  specifiedRules,
  validate,
  type DocumentNode,
  type GraphQLSchema,
} from 'graphql';
import { compileQuery, isCompiledQuery, type CompiledQuery } from 'graphql-jit';
import { useServer, type Extra } from 'graphql-ws/use/ws';
import { WebSocketServer, type WebSocket } from 'ws';
import { AppError, isAppError } from '../kernel/errors.js';
import type { Principal } from '../kernel/principal.js';
import type { AuditWriter } from '../audit/writer.js';
import { eventBusOf } from '../events/bus.js';
import { CREDENTIAL_REVOKED } from '../events/catalog.js';
import { checkAccess, type AccessPolicy } from './access.js';
import { createContext, type AppServices, type GatewayContext } from './context.js';
import type { CredentialResolver } from './credentials.js';
import { appErrorOf, toGraphQLError } from './errors.js';
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
  active: Set<string>;
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

export interface WsServer {
  /** Closes every socket with 1001 and stops accepting upgrades. */
  close(): Promise<void>;
  /** Ends every connection authenticated by this credential (revocation): close 4403. */
  endCredential(credentialId: string): void;
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
  const sharedResults = new WeakMap<object, Map<string, ReturnType<CompiledQuery['query']>>>();
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
        // Subscribers with the same document, variables and account get the same answer to an event:
        // execute it once for all of them (thousands of dashboards watch the same feed).
        const key = `${documentId(args.document)}|${args.operationName ?? ''}|${context.principal?.accountId ?? ''}|${JSON.stringify(variables)}`;
        return mapEvents(source, (event) => {
          let answers = sharedResults.get(event as object);
          if (!answers) sharedResults.set(event as object, (answers = new Map()));
          let answer = answers.get(key);
          if (!answer) answers.set(key, (answer = query.query(event, context, variables)));
          return answer;
        });
      },
      onConnect: async (ctx) => {
        const secret = credentialFromInit(ctx.connectionParams);
        const principal = secret ? await credentials.resolve(secret) : null;
        if (!principal) {
          ctx.extra.socket.close(CLOSE_UNAUTHORIZED, 'Unauthorized');
          return false;
        }
        const state: ConnectionState = {
          principal,
          requestId: requestIdOf(ctx.extra.request.headers['x-request-id']),
          ip: ctx.extra.request.socket.remoteAddress ?? '',
          userAgent: ctx.extra.request.headers['user-agent'],
          active: new Set(),
        };
        const expiresAt = principal.credential.expiresAt;
        if (expiresAt) {
          const ms = Math.max(0, expiresAt.getTime() - Date.now());
          state.expiryTimer = setTimeout(
            () => ctx.extra.socket.close(CLOSE_FORBIDDEN, 'Credential expired'),
            Math.min(ms, 2 ** 31 - 1),
          );
          state.expiryTimer.unref();
        }
        ctx.extra.state = state;
        connections.set(ctx.extra.socket, state);
        return true;
      },
      onSubscribe: async (ctx, id, payload) => {
        const state = ctx.extra.state;
        if (!state) return [new GraphQLError('Unauthorized', { extensions: { code: 'UNAUTHENTICATED' } })];
        const started = Date.now();
        const parsed = parseCached(payload.query);
        if (!('kind' in parsed)) return parsed;
        let status = 200;
        let operation = 'subscription';
        try {
          const requirements = policy.requirements(parsed, payload.operationName);
          operation = `${requirements.operationType} ${requirements.operationName ?? '(anonymous)'}`;
          const denied = checkAccess(requirements, state.principal);
          if (denied.length > 0) throw combineDenials(denied);
          if (state.active.size >= services.config.wsMaxSubscriptionsPerConnection) {
            throw new AppError(
              'RATE_LIMIT_EXCEEDED',
              `At most ${services.config.wsMaxSubscriptionsPerConnection} subscriptions per connection`,
            );
          }
          await services.admission.admit(state.principal, requirements);
          state.active.add(id);
          const contextValue = createContext(services, state.requestId, state.principal);
          return {
            schema,
            document: parsed,
            variableValues: payload.variables ?? undefined,
            operationName: payload.operationName ?? undefined,
            contextValue,
          };
        } catch (e) {
          if (!isAppError(e)) throw e;
          status = e.status;
          return [toGraphQLError(e)];
        } finally {
          audit.record({
            at: new Date(),
            requestId: state.requestId,
            accountId: state.principal.accountId,
            credentialKind: state.principal.credential.kind,
            credentialId: state.principal.credential.id,
            ip: state.ip,
            userAgent: state.userAgent,
            operation: `ws ${operation}`,
            status,
            durationMs: Date.now() - started,
          });
        }
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
  };
}

function keepAppErrorCode(error: GraphQLError): GraphQLError {
  const app = appErrorOf(error);
  return app ? toGraphQLError(app) : error;
}

/** Maps an async iterator, passing return/throw through so ending the subscription ends the source. */
function mapEvents<T, U>(
  source: AsyncIterable<T> & Partial<AsyncIterator<T>>,
  map: (value: T) => U | Promise<U>,
): AsyncIterableIterator<U> {
  const iterator = source[Symbol.asyncIterator]();
  const mapped: AsyncIterableIterator<U> = {
    async next() {
      const result = await iterator.next();
      return result.done ? { value: undefined, done: true } : { value: await map(result.value), done: false };
    },
    async return() {
      await iterator.return?.();
      return { value: undefined, done: true };
    },
    async throw(error?: unknown) {
      if (iterator.throw) await iterator.throw(error);
      throw error;
    },
    [Symbol.asyncIterator]() {
      return mapped;
    },
  };
  return mapped;
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
