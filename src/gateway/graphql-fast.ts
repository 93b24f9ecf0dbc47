import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import {
  parse,
  specifiedRules,
  validate,
  type DocumentNode,
  type ExecutionResult,
  type GraphQLSchema,
  type ValidationRule,
} from 'graphql';
import { compileQuery, isCompiledQuery, type CompiledQuery } from 'graphql-jit';
import Negotiator from 'negotiator';
import { isAppError } from '../kernel/errors.js';
import { isPromise } from '../kernel/maybe-async.js';
import { checkAccess, type AccessPolicy, type Requirements } from './access.js';
import { createContext, type AdmissionResult, type AppServices, type GatewayContext } from './context.js';
import { formatGraphQLError } from './errors.js';

/**
 * The hot path of POST /graphql. Apollo's request pipeline costs several times what executing
 * a compiled operation does, so operations seen more than once are parsed, validated and
 * compiled (graphql-jit) once and then served here with the same context, access check,
 * admission and error formatting as Apollo's path. Anything unusual — a first sighting,
 * invalid documents, access denials, GET, subscriptions, persisted-query extensions,
 * unsupported Accept headers — falls through to Apollo, which stays the reference behaviour.
 */

const MEDIA_TYPES = ['application/json; charset=utf-8', 'application/graphql-response+json; charset=utf-8'];
const MAX_ENTRIES = 1000;
/** A document is compiled on its second sighting: one-off queries never pay the compile cost. */
const COMPILE_AFTER = 2;

interface Entry {
  requirements: Requirements;
  compiled: CompiledQuery;
  /** The operation as the audit log names it, e.g. `query Dashboard`. */
  label: string;
}

export class CompiledOperations {
  private readonly entries = new Map<string, Entry | null>();
  private readonly sightings = new Map<string, number>();

  constructor(
    private readonly schema: GraphQLSchema,
    private readonly policy: AccessPolicy,
    private readonly extraRules: readonly ValidationRule[],
  ) {}

  /** The compiled operation, or undefined when Apollo should handle this request. */
  lookup(query: string, operationName: string | undefined): Entry | undefined {
    const key = operationName ? `${operationName}\u0000${query}` : query;
    const hit = this.entries.get(key);
    if (hit !== undefined) {
      // Refresh LRU position.
      this.entries.delete(key);
      this.entries.set(key, hit);
      return hit ?? undefined;
    }
    const seen = (this.sightings.get(key) ?? 0) + 1;
    if (seen < COMPILE_AFTER) {
      if (this.sightings.size >= MAX_ENTRIES) this.sightings.clear();
      this.sightings.set(key, seen);
      return undefined;
    }
    this.sightings.delete(key);
    const entry = this.compile(query, operationName);
    if (this.entries.size >= MAX_ENTRIES) this.entries.delete(this.entries.keys().next().value as string);
    this.entries.set(key, entry);
    return entry ?? undefined;
  }

  private compile(query: string, operationName: string | undefined): Entry | null {
    let document: DocumentNode;
    try {
      document = parse(query);
    } catch {
      return null;
    }
    if (validate(this.schema, document, [...specifiedRules, ...this.extraRules]).length > 0) return null;
    let requirements: Requirements;
    try {
      requirements = this.policy.requirements(document, operationName);
    } catch {
      return null;
    }
    if (requirements.operationType === 'subscription') return null;
    const compiled = compileQuery(this.schema, document, operationName);
    if (!isCompiledQuery(compiled)) return null;
    const label = `${requirements.operationType} ${requirements.operationName ?? '(anonymous)'}`;
    return { requirements, compiled, label };
  }
}

const negotiated = new Map<string, string | null>();

/** Apollo's choice of response media type for a single result, memoised per Accept header. */
function responseType(accept: string | undefined): string | null {
  if (!accept) return MEDIA_TYPES[0]!;
  let type = negotiated.get(accept);
  if (type === undefined) {
    type = new Negotiator({ headers: { accept } }).mediaType(MEDIA_TYPES) ?? null;
    if (negotiated.size > 100) negotiated.clear();
    negotiated.set(accept, type);
  }
  return type;
}

interface GraphQLBody {
  query?: unknown;
  operationName?: unknown;
  variables?: unknown;
  extensions?: unknown;
}

/**
 * The handler of /graphql: answers a cached operation itself, and hands every other request to
 * `fallback` (Apollo's handler). Synchronous whenever the caller, the counters and the resolvers
 * answer from memory, so a cached operation pays no promise.
 */
export function fastGraphQL(
  operations: CompiledOperations,
  services: AppServices,
  fallback: GraphQLHandler,
): GraphQLHandler {
  return function graphqlHandler(this: FastifyInstance, request: FastifyRequest, reply: FastifyReply) {
    const call = fastCallFor(operations, services, request, reply);
    if (!call) return fallback.call(this, request, reply);
    call.start(); // sends the answer, now or when a remote counter answers: nothing to return
    return undefined;
  };
}

export type GraphQLHandler = (this: FastifyInstance, request: FastifyRequest, reply: FastifyReply) => unknown;

/** The fast-path call for this request, or undefined when Apollo must answer it. */
function fastCallFor(
  operations: CompiledOperations,
  services: AppServices,
  request: FastifyRequest,
  reply: FastifyReply,
): FastCall | undefined {
  if (request.method !== 'POST') return undefined;
  const body = request.body as GraphQLBody | undefined;
  if (!body || typeof body.query !== 'string' || body.extensions !== undefined) return undefined;
  const operationName = typeof body.operationName === 'string' ? body.operationName : undefined;
  if (body.operationName !== undefined && body.operationName !== null && operationName === undefined)
    return undefined;
  const variables = body.variables ?? undefined;
  if (
    variables !== undefined &&
    (typeof variables !== 'object' || variables === null || Array.isArray(variables))
  )
    return undefined;
  const contentType = responseType(request.headers.accept);
  if (!contentType) return undefined;
  const entry = operations.lookup(body.query, operationName);
  if (!entry) return undefined;

  const principal = request.principal ?? null;
  if (checkAccess(entry.requirements, principal).length > 0) return undefined; // Apollo's path reports denials
  const ctx = createContext(services, request.id, principal);
  request.gatewayMeta = ctx.meta;
  ctx.meta.operation = entry.label;
  reply.header('content-type', contentType);
  return new FastCall(services, reply, ctx, entry, variables as Record<string, unknown> | undefined);
}

/**
 * One request on the fast path. Its steps are methods rather than closures made per request:
 * cheaper to create, and with `tsx` every named closure would also pay for keeping its name.
 */
class FastCall {
  constructor(
    private readonly services: AppServices,
    private readonly reply: FastifyReply,
    private readonly ctx: GatewayContext,
    private readonly entry: Entry,
    private readonly variables: Record<string, unknown> | undefined,
  ) {}

  start(): void {
    try {
      const principal = this.ctx.principal;
      const admitted = principal
        ? this.services.admission.admit(principal, this.entry.requirements)
        : undefined;
      const result = isPromise(admitted) ? admitted.then((a) => this.run(a)) : this.run(admitted);
      if (isPromise(result)) result.then((r) => this.respond(r)).catch((e: unknown) => this.fail(e));
      else this.respond(result);
    } catch (e) {
      this.fail(e);
    }
  }

  private run(admitted: AdmissionResult | undefined) {
    if (admitted) Object.assign(this.ctx.meta.headers, admitted.headers);
    return this.entry.compiled.query(undefined, this.ctx, this.variables);
  }

  private respond(result: ExecutionResult): void {
    const reply = this.reply;
    reply.headers(this.ctx.meta.headers);
    if (!result.errors || result.errors.length === 0) {
      reply.send(JSON.stringify({ data: result.data }));
      return;
    }
    const logger = this.services.logger;
    const errors = result.errors.map((err) =>
      formatGraphQLError(err.toJSON(), err, (e: unknown) =>
        logger.error({ err: e }, 'unexpected GraphQL error'),
      ),
    );
    if (!('data' in result) || result.data === undefined) {
      // Variable coercion failed: nothing executed; Apollo answers these with 400 too.
      reply.code(400);
      reply.send(
        JSON.stringify({
          errors: errors.map((e) => ({ ...e, extensions: { ...e.extensions, code: 'BAD_USER_INPUT' } })),
        }),
      );
      return;
    }
    reply.send(JSON.stringify({ errors, data: result.data }));
  }

  private fail(e: unknown): void {
    // Anything else is the error handler's (a 500 that is logged).
    if (!isAppError(e)) return void this.reply.send(e instanceof Error ? e : new Error(String(e)));
    this.reply.code(e.status).headers({ ...this.ctx.meta.headers, ...e.headers });
    this.reply.send(
      JSON.stringify({ errors: [{ message: e.message, extensions: { code: e.code, ...e.details } }] }),
    );
  }
}
