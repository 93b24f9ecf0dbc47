import type { IncomingMessage } from 'node:http';
import { performance } from 'node:perf_hooks';
import proxyAddr from '@fastify/proxy-addr';
import type { FastifyInstance } from 'fastify';
import {
  GraphQLError,
  createSourceEventStream,
  type ExecutionArgs,
  type ExecutionResult,
  type FormattedExecutionResult,
  type GraphQLFormattedError,
} from 'graphql';
import { useServer, type Extra } from 'graphql-ws/use/ws';
import { WebSocketServer, type WebSocket } from 'ws';
import type { Config } from '../../config.js';
import { AppError, isAppError, statusOfCode } from '../../kernel/errors.js';
import type { MaybePromise } from '../../kernel/maybe-async.js';
import type { Principal } from '../../kernel/principal.js';
import { ACCOUNT_CHANGED, CREDENTIAL_REVOKED, type DomainEvent } from '../../kernel/events.js';
import { checkAccess, type Requirements } from '../pipeline/access.js';
import type { AppServices, AuditLog, GatewayContext } from '../schema/context.js';
import type { CredentialResolver } from './credentials.js';
import { toGraphQLError } from '../pipeline/errors.js';
import { requestIdOf } from './edge/hooks.js';
import type { Admitted, Answer, Operations } from '../pipeline/operation.js';

/** graphql-ws close codes we use beyond the protocol's own. */
export const CLOSE_UNAUTHORIZED = 4401;
export const CLOSE_FORBIDDEN = 4403;
/** Over a bound: connections per credential or per address, or pings per minute. */
export const CLOSE_TOO_MANY = 4429;

/** Pings a connection may send back to back before the per-minute rate applies. */
const PING_BURST = 10;

/** A connection's ping allowance: a token bucket of PING_BURST, refilled at the configured rate. */
class PingAllowance {
  private tokens = PING_BURST;
  private at = performance.now();

  constructor(private readonly perMs: number) {}

  take(): boolean {
    const now = performance.now();
    this.tokens = Math.min(PING_BURST, this.tokens + (now - this.at) * this.perMs);
    this.at = now;
    if (this.tokens < 1) return false;
    this.tokens -= 1;
    return true;
  }
}

/** Adds `delta` to a count by key, forgetting keys that reach zero. */
function tally(counts: Map<string, number>, key: string, delta: number): void {
  const next = (counts.get(key) ?? 0) + delta;
  if (next > 0) counts.set(key, next);
  else counts.delete(key);
}

interface ConnectionState {
  /** The connection's credential; an in-band refresh replaces it (same account and subject). */
  principal: Principal;
  /** The secret it was resolved from, resolved again on an account change and every re-check. */
  secret: string;
  requestId: string;
  ip: string;
  userAgent?: string;
  /** Operations holding a slot of the per-connection cap (with what they need, for refreshes). */
  active: Map<string, Requirements | null>;
  /** Started operations whose audit record waits for the subscribe function's verdict. */
  starting: Map<string, { operation: string; startedAt: number }>;
  /** The event streams of its running subscriptions, to end one its caller may no longer run. */
  streams: Map<string, EventAnswers>;
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
  /** Subscriptions running on those connections. */
  readonly subscriptionCount: number;
}

/**
 * Identical subscriptions (same prepared operation, variables and account) get the same answer to
 * an event: it is executed and formatted once per event for all of them, and graphql-ws then
 * sends it to each (thousands of dashboards watch the same feed).
 */
class SharedAnswers {
  private readonly answers = new WeakMap<DomainEvent, Map<string, MaybePromise<Answer>>>();
  private readonly keys = new WeakMap<GatewayContext, string>();
  private readonly documentIds = new WeakMap<object, number>();
  private nextId = 0;

  constructor(private readonly operations: Operations) {}

  to(event: DomainEvent, admitted: Admitted): MaybePromise<Answer> {
    const key = this.keyOf(admitted);
    let perEvent = this.answers.get(event);
    if (!perEvent) this.answers.set(event, (perEvent = new Map()));
    let answer = perEvent.get(key);
    if (answer === undefined) {
      answer = this.operations.execute(admitted, event);
      perEvent.set(key, answer);
    }
    return answer;
  }

  private keyOf(admitted: Admitted): string {
    let key = this.keys.get(admitted.context);
    if (key === undefined) {
      let id = this.documentIds.get(admitted.prepared);
      if (id === undefined) this.documentIds.set(admitted.prepared, (id = this.nextId++));
      key = `${id}|${admitted.context.principal?.accountId ?? ''}|${JSON.stringify(admitted.variables ?? {})}`;
      this.keys.set(admitted.context, key);
    }
    return key;
  }
}

/**
 * A subscription's answers, pulled by graphql-ws at the pace its socket accepts writes. A stream
 * that refuses to go on (the subscriber fell too far behind) ends with one final error answer.
 * `return()` reaches the event source at once, so a completed subscription stops listening even
 * while it waits for an event.
 */
class EventAnswers implements AsyncIterableIterator<FormattedExecutionResult> {
  private ended = false;
  /** Set when the caller lost access: the one answer left to send. */
  private final: GraphQLFormattedError[] | undefined;

  constructor(
    private readonly source: AsyncIterator<DomainEvent>,
    private readonly answerTo: (event: DomainEvent) => MaybePromise<Answer>,
    private readonly format: (error: AppError) => GraphQLFormattedError[],
  ) {}

  /** Ends the stream with one last answer carrying `errors`, even while it waits for an event. */
  revoke(errors: GraphQLFormattedError[]): void {
    if (this.ended || this.final) return;
    this.final = errors;
    void this.source.return?.();
  }

  private finalAnswer(): IteratorResult<FormattedExecutionResult> {
    const errors = this.final ?? [];
    this.final = undefined;
    this.ended = true;
    return { value: { errors }, done: false };
  }

  next(): Promise<IteratorResult<FormattedExecutionResult>> {
    if (this.final) return Promise.resolve(this.finalAnswer());
    if (this.ended) return Promise.resolve({ value: undefined, done: true });
    return this.source.next().then(
      async (step): Promise<IteratorResult<FormattedExecutionResult>> => {
        if (this.final) return this.finalAnswer();
        return step.done
          ? { value: undefined, done: true }
          : { value: (await this.answerTo(step.value)).body, done: false };
      },
      (error: unknown) => {
        if (!isAppError(error)) throw error;
        this.ended = true;
        return { value: { errors: this.format(error) }, done: false };
      },
    );
  }

  async return(): Promise<IteratorResult<FormattedExecutionResult>> {
    this.ended = true;
    await this.source.return?.();
    return { value: undefined, done: true };
  }

  async throw(error?: unknown): Promise<IteratorResult<FormattedExecutionResult>> {
    this.ended = true;
    await this.source.return?.();
    throw error;
  }

  [Symbol.asyncIterator](): AsyncIterableIterator<FormattedExecutionResult> {
    return this;
  }
}

/** `{"refresh": "<access token or API key>"}` in a ping: the in-band credential refresh. */
function refreshSecretOf(payload: unknown): string | null | undefined {
  if (typeof payload !== 'object' || payload === null || !('refresh' in payload)) return undefined;
  const secret = (payload as { refresh: unknown }).refresh;
  if (typeof secret !== 'string') return null;
  return /^Bearer\s+(\S+)$/i.exec(secret.trim())?.[1] ?? (secret.trim() || null);
}

function sameSubject(a: Principal, b: Principal): boolean {
  return a.accountId === b.accountId && a.userId === b.userId && a.clientId === b.clientId;
}

export function registerGraphQLWs(
  app: FastifyInstance,
  operations: Operations,
  services: AppServices,
  credentials: CredentialResolver,
  audit: AuditLog,
): WsServer {
  const wss = new WebSocketServer({ noServer: true, maxPayload: 1024 * 1024 });
  const connections = new Map<WebSocket, ConnectionState>();
  /** What each operation started on a socket was admitted as, by the context graphql-ws hands back. */
  const admittedBy = new WeakMap<GatewayContext, Admitted>();
  /** Which connection and operation id each admitted context belongs to. */
  const slotOf = new WeakMap<GatewayContext, { state: ConnectionState; id: string }>();
  const shared = new SharedAnswers(operations);
  /**
   * graphql-ws wants GraphQLError objects back from onSubscribe and serializes them itself; the
   * pipeline's errors are already formatted, so onError sends those instead (its documented use).
   */
  const formattedOf = new WeakMap<readonly GraphQLError[], readonly GraphQLFormattedError[]>();
  const asErrors = (errors: readonly GraphQLFormattedError[] | undefined): GraphQLError[] => {
    const list = (errors ?? []).map((e) => new GraphQLError(e.message));
    formattedOf.set(list, errors ?? []);
    return list;
  };
  const formatError = (error: AppError) => operations.format([toGraphQLError(error)]);

  const { config, metrics } = services;
  const clientAddress = clientAddressOf(config.trustProxy);
  /** Open sockets by client address (initialised or not) and connections by credential id. */
  const byAddress = new Map<string, number>();
  const byCredential = new Map<string, number>();
  const pings = new WeakMap<WebSocket, PingAllowance>();
  const pingsPerMs = config.wsMaxPingsPerMinute / 60_000;

  app.server.on('upgrade', (req: IncomingMessage, socket, head) => {
    const path = (req.url ?? '').split('?')[0];
    if (path !== '/graphql') {
      socket.destroy();
      return;
    }
    const address = clientAddress(req);
    wss.handleUpgrade(req, socket, head, (ws) => {
      // Refused after the handshake, so the client sees a close code rather than a failed upgrade.
      if ((byAddress.get(address) ?? 0) >= config.wsMaxConnectionsPerAddress) {
        metrics.wsRefused('address');
        ws.close(CLOSE_TOO_MANY, 'Too many connections from this address');
        return;
      }
      tally(byAddress, address, 1);
      ws.once('close', () => tally(byAddress, address, -1));
      wss.emit('connection', ws, req);
    });
  });

  /** One audit record per operation started on a socket, like one per HTTP request. */
  const recordStart = (
    state: ConnectionState,
    operation: string,
    { status, code }: StartOutcome,
    startedAt: number,
  ) =>
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
      door: 'graphql-ws',
      errorCode: code,
    });

  const expireAt = (state: ConnectionState, socket: WebSocket) => {
    if (state.expiryTimer) clearTimeout(state.expiryTimer);
    state.expiryTimer = undefined;
    const expiresAt = state.principal.credential.expiresAt;
    if (!expiresAt) return;
    const ms = Math.max(0, expiresAt.getTime() - services.clock.now().getTime());
    state.expiryTimer = setTimeout(
      () => socket.close(CLOSE_FORBIDDEN, 'Credential expired'),
      Math.min(ms, 2 ** 31 - 1),
    );
    state.expiryTimer.unref();
  };

  const admittedOf = (args: ExecutionArgs): Admitted => {
    const admitted = admittedBy.get(args.contextValue as GatewayContext);
    if (!admitted) throw new Error('operation started without onSubscribe admitting it');
    return admitted;
  };

  const server = useServer<Record<string, unknown> | undefined, WsExtra>(
    {
      schema: operations.schema,
      // The pipeline hands back answers already formatted (once per event, shared by identical
      // subscriptions); graphql-ws serializes a result as it is, so they go out unchanged. Its
      // typings name the unformatted ExecutionResult, hence the casts.
      execute: async (args) =>
        (await operations.execute(admittedOf(args), undefined)).body as unknown as ExecutionResult,
      subscribe: async (args) => {
        const admitted = admittedOf(args);
        const source = await createSourceEventStream(args);
        if (!(Symbol.asyncIterator in source)) {
          return operations.answerTo(source, admitted.context.meta).body as unknown as ExecutionResult;
        }
        const events = source as AsyncIterableIterator<DomainEvent>;
        const stream = new EventAnswers(events, (event) => shared.to(event, admitted), formatError);
        const slot = slotOf.get(admitted.context);
        if (slot?.state.active.has(slot.id)) slot.state.streams.set(slot.id, stream);
        return stream as unknown as AsyncIterableIterator<ExecutionResult>;
      },
      // Results come from the pipeline already formatted (see `execute` above): sent as they are.
      onNext: (_ctx, _id, _payload, _args, result) => result as unknown as FormattedExecutionResult,
      onError: (_ctx, _id, _payload, errors) => formattedOf.get(errors),
      onConnect: async (ctx) => {
        const socket = ctx.extra.socket;
        const secret = credentialFromInit(ctx.connectionParams);
        const principal = secret ? await credentials.resolve(secret) : null;
        // The client may have left while its credential was checked: onClose has run already, so
        // state kept now would never be removed.
        if (socket.readyState !== socket.OPEN) return false;
        if (!principal || !secret) {
          socket.close(CLOSE_UNAUTHORIZED, 'Unauthorized');
          return false;
        }
        if ((byCredential.get(principal.credential.id) ?? 0) >= config.wsMaxConnectionsPerCredential) {
          metrics.wsRefused('credential');
          socket.close(CLOSE_TOO_MANY, 'Too many connections for this credential');
          return false;
        }
        tally(byCredential, principal.credential.id, 1);
        const state: ConnectionState = {
          principal,
          secret,
          requestId: requestIdOf(ctx.extra.request.headers['x-request-id']),
          ip: clientAddress(ctx.extra.request),
          userAgent: ctx.extra.request.headers['user-agent'],
          active: new Map(),
          starting: new Map(),
          streams: new Map(),
        };
        expireAt(state, socket);
        ctx.extra.state = state;
        connections.set(socket, state);
        return true;
      },
      // In-band refresh (src/gateway/README.md, "The doors"): the pong graphql-ws sends after this resolves is
      // the acknowledgement; a refused credential closes the connection like a revoked one.
      onPing: async (ctx, payload) => {
        const socket = ctx.extra.socket;
        let allowance = pings.get(socket);
        if (!allowance) pings.set(socket, (allowance = new PingAllowance(pingsPerMs)));
        if (!allowance.take()) {
          metrics.wsRefused('pings');
          socket.close(CLOSE_TOO_MANY, 'Too many pings');
          return;
        }
        const secret = refreshSecretOf(payload);
        if (secret === undefined) return;
        const state = ctx.extra.state;
        const principal = state && secret ? await credentials.resolve(secret) : null;
        const allowed =
          state &&
          principal &&
          sameSubject(principal, state.principal) &&
          [...state.active.values()].every((needs) => !needs || checkAccess(needs, principal).length === 0);
        if (!allowed || !state || !principal || !secret) {
          socket.close(CLOSE_FORBIDDEN, 'Credential refresh refused');
          return;
        }
        tally(byCredential, state.principal.credential.id, -1);
        tally(byCredential, principal.credential.id, 1);
        state.principal = principal;
        state.secret = secret;
        expireAt(state, socket);
      },
      onSubscribe: async (ctx, id, payload) => {
        const state = ctx.extra.state;
        if (!state) return [new GraphQLError('Unauthorized', { extensions: { code: 'UNAUTHENTICATED' } })];
        const startedAt = performance.now();
        const prepared = operations.prepare(payload.query, payload.operationName);
        if (prepared.kind === 'rejected') {
          // Like a malformed POST /graphql: audited under the door's name, status 400.
          recordStart(
            state,
            'graphql',
            { status: prepared.status, code: prepared.codes[0] ?? null },
            startedAt,
          );
          return asErrors(prepared.body.errors);
        }
        // graphql-ws handles a connection's messages concurrently: the slot is taken before the
        // first await, or simultaneous subscribes would all pass the check.
        if (state.active.size >= config.wsMaxSubscriptionsPerConnection) {
          const error = new AppError(
            'RATE_LIMIT_EXCEEDED',
            `At most ${config.wsMaxSubscriptionsPerConnection} subscriptions per connection`,
          );
          recordStart(state, prepared.label, { status: error.status, code: error.code }, startedAt);
          return asErrors(formatError(error));
        }
        state.active.set(id, prepared.requirements);
        const admitted = await operations.admit(prepared, {
          principal: state.principal,
          requestId: state.requestId,
          variables: payload.variables ?? undefined,
        });
        if ('status' in admitted) {
          state.active.delete(id);
          recordStart(state, prepared.label, startOutcome(admitted.body), startedAt);
          return asErrors(admitted.body.errors);
        }
        state.starting.set(id, { operation: prepared.label, startedAt });
        admittedBy.set(admitted.context, admitted);
        slotOf.set(admitted.context, { state, id });
        return {
          schema: operations.schema,
          document: prepared.document,
          variableValues: payload.variables ?? undefined,
          operationName: prepared.operationName,
          contextValue: admitted.context,
        };
      },
      // The subscribe function may still refuse (a bad argument): the audit records its verdict.
      onOperation: (ctx, id, _payload, _args, result) => {
        const state = ctx.extra.state;
        const start = state?.starting.get(id);
        if (!state || !start) return;
        state.starting.delete(id);
        recordStart(state, start.operation, startOutcome(result), start.startedAt);
      },
      onComplete: (ctx, id) => {
        ctx.extra.state?.active.delete(id);
        ctx.extra.state?.streams.delete(id);
      },
      onClose: (ctx) => {
        const state = ctx.extra.state;
        if (!state) return;
        if (state.expiryTimer) clearTimeout(state.expiryTimer);
        tally(byCredential, state.principal.credential.id, -1);
        connections.delete(ctx.extra.socket);
      },
    },
    wss,
    config.wsKeepAliveMs,
  );

  const endCredential = (credentialId: string) => {
    for (const [socket, state] of connections) {
      if (state.principal.credential.id === credentialId) socket.close(CLOSE_FORBIDDEN, 'Credential revoked');
    }
  };

  /**
   * Applies what a credential grants now to the connections opened with it: a credential no longer
   * valid closes them (4403); otherwise each takes the new principal, and each running subscription
   * it no longer allows ends with one final error (PLAN_REQUIRED / FORBIDDEN) while the others go on.
   */
  const apply = (sockets: Array<[WebSocket, ConnectionState]>, principal: Principal | null) => {
    for (const [socket, state] of sockets) {
      if (socket.readyState !== socket.OPEN || connections.get(socket) !== state) continue;
      if (!principal) {
        socket.close(CLOSE_FORBIDDEN, 'Credential revoked');
        continue;
      }
      state.principal = principal;
      expireAt(state, socket);
      for (const [id, stream] of state.streams) {
        const needs = state.active.get(id);
        const refused = needs ? checkAccess(needs, principal) : [];
        if (refused.length > 0) stream.revoke(operations.format(refused.map(toGraphQLError)));
      }
    }
  };
  /**
   * Resolves the credentials of the connections `which` selects again, once per distinct secret
   * (thousands of sockets may share one key): from the credential cache, so a re-check costs a
   * database lookup only when the cache has forgotten the credential.
   */
  const recheck = (which: (state: ConnectionState) => boolean) => {
    const bySecret = new Map<string, Array<[WebSocket, ConnectionState]>>();
    for (const entry of connections) {
      if (!which(entry[1])) continue;
      const group = bySecret.get(entry[1].secret);
      if (group) group.push(entry);
      else bySecret.set(entry[1].secret, [entry]);
    }
    for (const [secret, sockets] of bySecret) {
      Promise.resolve(credentials.resolve(secret, sockets[0]![0])).then(
        (principal) => apply(sockets, principal),
        (e: unknown) => services.logger.warn({ err: e }, 'graphql-ws: credential re-check failed'),
      );
    }
  };
  // Revocations and plan changes reach every process through the bus (OAuth revocation, API keys
  // noticed by the key watch, `account.changed` from set-plan). The re-check waits for the other
  // listeners of the same event, the credential cache's eviction among them.
  const stopListening = services.bus.subscribe((event) => {
    if (event.type === CREDENTIAL_REVOKED)
      endCredential(String((event.payload as { credentialId?: unknown }).credentialId));
    else if (event.type === ACCOUNT_CHANGED && event.accountId) {
      const accountId = event.accountId;
      setImmediate(() =>
        recheck(({ principal }) => principal.accountId === accountId || principal.sandboxOf === accountId),
      );
    }
  });
  // Without the bus (Redis down, a change written by hand), the cache's TTL still bounds how long a
  // connection acts on an old state: every open connection is re-checked every half TTL.
  const recheckTimer = setInterval(() => recheck(() => true), config.credentialCacheTtlMs / 2);
  recheckTimer.unref();

  return {
    async close() {
      stopListening?.();
      clearInterval(recheckTimer);
      await server.dispose();
    },
    endCredential,
    get connectionCount() {
      return connections.size;
    },
    // Counted when a metrics scrape asks, instead of kept up to date on every subscribe and complete.
    get subscriptionCount() {
      let count = 0;
      for (const state of connections.values()) count += state.active.size;
      return count;
    },
  };
}

/**
 * What an operation start is audited with: a stream or an execution result with data is a
 * success (as over HTTP, field errors keep 200); an answer without data was refused before
 * execution: the status its first error's code maps to.
 */
function startOutcome(result: unknown): StartOutcome {
  if (typeof result !== 'object' || result === null) return { status: 200, code: null };
  const code = (result as FormattedExecutionResult).errors?.[0]?.extensions?.code;
  const named = typeof code === 'string' ? code : null;
  if (Symbol.asyncIterator in result || 'data' in result) return { status: 200, code: named };
  return { status: statusOfCode(code), code: named };
}

/** The status and first error code an operation start is audited with. */
interface StartOutcome {
  status: number;
  code: string | null;
}
