import {
  GraphQLError,
  Kind,
  coerceInputValue,
  getOperationAST,
  isInputType,
  isNonNullType,
  print,
  typeFromAST,
  parse,
  specifiedRules,
  validate,
  type DocumentNode,
  type ExecutionResult,
  type FormattedExecutionResult,
  type GraphQLFormattedError,
  type GraphQLSchema,
  type OperationDefinitionNode,
  type ValidationRule,
} from 'graphql';
import { compileQuery, isCompiledQuery, type CompiledQuery } from 'graphql-jit';
import { AppError, isAppError, withHeaders } from '../../kernel/errors.js';
import { andThen, isPromise, type MaybePromise } from '../../kernel/maybe-async.js';
import type { Principal } from '../../kernel/principal.js';
import { Lru } from '../../kernel/lru.js';
import { checkAccess, type AccessPolicy, type Requirements } from './access.js';
import {
  AnswerCache,
  answerSourceOf,
  keptWith,
  type AnswerSource,
  type Execute,
  type Keepable,
} from './answers.js';
import {
  createContext,
  type AppServices,
  type GatewayContext,
  type OperationMeta,
} from '../schema/context.js';
import { estimateCost } from './demand.js';
import { formatErrors, toGraphQLError } from './errors.js';
import { untrustedDocument } from './persisted.js';
import { operationSpan } from '../observability/telemetry.js';

/**
 * The life of one GraphQL operation, whatever door it came in by (GraphQL over HTTP, graphql-ws,
 * a REST shim, a streaming route):
 *
 *   prepare(source, operationName)   parse → validate (demand control included) → choose the
 *                                     operation (once: every later step is handed the chosen
 *                                     definition) → access requirements → compile; cached in one
 *                                     bounded LRU, invalid documents in a separate negative cache
 *   run(prepared, request)           access check → admission (plan, rate, quota) → context →
 *                                     execute (or the result kept for this version of the data,
 *                                     answers.ts) → the one error formatter
 *
 * A door only adapts its transport to these two calls, so an operation gets the same answer by
 * every door, by every method, on its first sighting and its hundredth. Audit happens where the
 * door knows the final status: the HTTP edge's onResponse hook, and the WebSocket door per start.
 */

export type OperationType = 'query' | 'mutation' | 'subscription';

export interface PreparedOperation {
  readonly kind: 'prepared';
  readonly document: DocumentNode;
  readonly operationName: string | undefined;
  readonly operationType: OperationType;
  /**
   * The operation chosen from the document, once, in prepare (graphql's getOperationAST): access
   * requirements, cost, trusted documents, kept answers and coercion errors all read this one.
   */
  readonly definition: OperationDefinitionNode;
  readonly requirements: Requirements;
  /** The operation as audit logs and metrics name it, e.g. `query Dashboard`. */
  readonly label: string;
  /** Executes the operation (for a subscription: its selection on one event as root value). */
  readonly compiled: CompiledQuery;
  /** Names this prepared operation among the kept answers (answers.ts). */
  readonly id: number;
  /** The one source all its fields read, when its results may be kept between requests. */
  readonly answers: Keepable | undefined;
}

/** A document that cannot run: a syntax or validation error, or no operation to pick. */
export interface RejectedOperation {
  readonly kind: 'rejected';
  readonly status: 400;
  readonly body: FormattedExecutionResult;
  readonly codes: readonly string[];
}

export type Prepared = PreparedOperation | RejectedOperation;

export interface OperationRequest {
  principal: Principal | null;
  requestId: string;
  variables?: Record<string, unknown> | undefined;
  /** Filled in as the operation runs (label, error codes, response headers); the door reads it. */
  meta?: OperationMeta;
  /**
   * Whether the answer carries `extensions.cost` (GraphQL doors; default true). REST shims answer
   * with one field of the result, so they skip the estimate.
   */
  reportCost?: boolean;
}

/** What a door sends back: the HTTP status the answer implies, extra headers and the body. */
export interface Answer {
  status: number;
  headers: Record<string, string>;
  body: FormattedExecutionResult;
}

/** `extensions.cost` of a one-shot answer. */
interface CostExtension {
  requested: number;
  maximum: number;
  budget?: { limit: number; remaining: number; resetAt: string };
}

/** An operation that passed its access check and admission, ready to execute (once, or per event). */
export interface Admitted {
  readonly prepared: PreparedOperation;
  readonly context: GatewayContext;
  readonly variables: Record<string, unknown> | undefined;
  readonly reportCost: boolean;
}

const MAX_PREPARED = 1000;
const MAX_REJECTED = 500;
const COSTS_PER_OPERATION = 64;

export class Operations {
  private readonly prepared = new Lru<string, PreparedOperation | RejectedOperation>({
    maxEntries: MAX_PREPARED,
  });
  private readonly rejected = new Lru<string, RejectedOperation>({ maxEntries: MAX_REJECTED });
  private readonly rules: readonly ValidationRule[];
  private readonly answers: AnswerCache | undefined;
  private readonly costs = new WeakMap<PreparedOperation, Lru<string, number>>();
  private preparedCount = 0;

  constructor(
    readonly schema: GraphQLSchema,
    private readonly policy: AccessPolicy,
    private readonly services: AppServices,
    /** The data whose query results may be kept between requests (DomainModule.answers). */
    private readonly answerSources: readonly AnswerSource[] = [],
  ) {
    this.rules = [...specifiedRules, ...services.validationRules];
    const maxBytes = services.config.answerCacheMb * 1024 * 1024;
    this.answers =
      maxBytes > 0
        ? new AnswerCache(maxBytes, (source, outcome) => services.metrics.answerCache(source, outcome))
        : undefined;
    if (this.answers) {
      const answers = this.answers;
      services.metrics.observeAnswerCache(() => answers.size);
    }
  }

  /** Prepared operations currently cached (tests and metrics). */
  get cachedCount(): number {
    return this.prepared.size + this.rejected.size;
  }

  prepare(source: string, operationName?: string | null): Prepared {
    // An empty operationName is a name (graphql-js and Apollo look for it): keyed apart from none.
    const key = operationName == null ? source : `${operationName}\u0000${source}`;
    const hit = this.prepared.get(key) ?? this.rejected.get(source);
    if (hit) return hit;
    let document: DocumentNode;
    try {
      // Validating a 1,000-alias document blocks the event loop for ~0.2 s: refuse it while parsing.
      document = parse(source, { maxTokens: this.services.config.graphqlMaxTokens });
    } catch (e) {
      return this.reject(source, [parseFailure(e)]);
    }
    const invalid = validate(this.schema, document, this.rules);
    if (invalid.length > 0) return this.reject(source, invalid.map(validationFailure));
    const entry = this.prepareDocument(document, operationName);
    this.prepared.set(key, entry);
    return entry;
  }

  /** A trusted document (our own REST operations): validated with graphql's rules only, never cached. */
  prepareTrusted(document: DocumentNode, operationName: string): PreparedOperation {
    const invalid = validate(this.schema, document);
    if (invalid.length > 0) throw new Error(`${operationName}: ${invalid.map((e) => e.message).join('; ')}`);
    const entry = this.prepareDocument(document, operationName);
    if (entry.kind === 'rejected') throw new Error(`${operationName}: ${JSON.stringify(entry.body.errors)}`);
    return entry;
  }

  private prepareDocument(document: DocumentNode, operationName: string | null | undefined): Prepared {
    const operation = chooseOperation(document, operationName);
    if (operation instanceof GraphQLError) return rejection([operation]);
    const requirements = this.policy.requirements(document, operation);
    const compiled = compileQuery(this.schema, document, operation.name?.value);
    // graphql-jit refuses only what validation lets through and it cannot compile: a server fault.
    if (!isCompiledQuery(compiled))
      throw new Error(
        `Cannot compile a valid operation: ${compiled.errors?.map((e) => e.message).join('; ')}`,
      );
    const name = operation.name?.value;
    return {
      kind: 'prepared',
      id: ++this.preparedCount,
      answers: answerSourceOf(this.schema, document, operation, this.answerSources),
      document,
      operationName: name,
      operationType: operation.operation,
      definition: operation,
      requirements,
      label: `${operation.operation} ${name ?? '(anonymous)'}`,
      compiled,
    };
  }

  private reject(source: string, errors: GraphQLError[]): RejectedOperation {
    const entry = rejection(errors);
    this.rejected.set(source, entry);
    return entry;
  }

  /** The whole life after prepare: admit, then execute once. */
  run(prepared: PreparedOperation, request: OperationRequest): MaybePromise<Answer> {
    return andThen(this.admit(prepared, request), (admitted) =>
      'status' in admitted ? admitted : this.execute(admitted, undefined, request.meta),
    );
  }

  /**
   * Access check, then admission, then the context: a refusal comes back as an answer (401, 402,
   * 403, 429) carrying the caller's rate-limit headers. Synchronous when the counters are local.
   */
  admit(prepared: PreparedOperation, request: OperationRequest): MaybePromise<Admitted | Answer> {
    const meta = request.meta ?? { headers: {} };
    meta.operation = prepared.label;
    // TRUSTED_DOCUMENTS: memoized per prepared document, so checking every request costs a lookup.
    const trusted = this.services.persisted.trusted;
    if (trusted && !trusted.allowsDocument(prepared.document, prepared.definition))
      return this.refuse(untrustedDocument(), meta);
    const principal = request.principal;
    const denied = checkAccess(prepared.requirements, principal);
    if (denied.length > 0) {
      const error = combineDenials(denied);
      if (!principal) return this.refuse(error, meta);
      return this.services.admission
        .peek(principal, prepared.requirements)
        .then((headers) => this.refuse(withHeaders(error, headers), meta));
    }
    const admitted = (): Admitted => {
      const context = createContext(this.services, request.requestId, principal, meta);
      return { prepared, context, variables: request.variables, reportCost: request.reportCost ?? true };
    };
    if (!principal) return admitted();
    try {
      const admission = this.services.admission.admit(principal, prepared.requirements);
      const accept = (result: { headers: Record<string, string> }): Admitted => {
        Object.assign(meta.headers, result.headers);
        return admitted();
      };
      return isPromise(admission)
        ? admission.then(accept, (e: unknown) => this.refuseThrown(e, meta))
        : accept(admission);
    } catch (e) {
      return this.refuseThrown(e, meta);
    }
  }

  /**
   * Executes an admitted operation (for a subscription, on one event) and formats its answer. A
   * one-shot execution reports its estimated cost and the caller's budget in `extensions.cost`.
   */
  execute(admitted: Admitted, root: unknown, meta?: OperationMeta): MaybePromise<Answer> {
    const answer = this.executeOnce(admitted, root, meta ?? admitted.context.meta);
    if (!admitted.reportCost || admitted.prepared.operationType === 'subscription') return answer;
    return andThen(answer, (a) => this.withCost(a, admitted));
  }

  /**
   * `extensions.cost`, as Shopify's and GitHub's GraphQL APIs report it: what the operation was
   * estimated to cost against the per-operation maximum (GRAPHQL_MAX_COST), and the caller's
   * per-minute budget after this call (the X-RateLimit-* headers' numbers).
   */
  private withCost(answer: Answer, admitted: Admitted): Answer {
    const headers = answer.headers;
    const limit = headers['X-RateLimit-Limit'];
    const cost: CostExtension = {
      requested: this.requestedCost(admitted),
      maximum: this.services.config.graphqlMaxCost,
    };
    if (limit !== undefined)
      cost.budget = {
        limit: Number(limit),
        remaining: Number(headers['X-RateLimit-Remaining']),
        resetAt: isoOfEpochSeconds(headers['X-RateLimit-Reset']),
      };
    // Object literals of a fixed shape, not spreads: an object made by spreading another is slower
    // to build and to serialize (measured in the server: 4 µs for this step, 1.5 µs without).
    const { errors, data } = answer.body;
    const extensions = answer.body.extensions ? { ...answer.body.extensions, cost } : { cost };
    const body: FormattedExecutionResult =
      errors === undefined
        ? { data, extensions }
        : 'data' in answer.body
          ? { errors, data, extensions }
          : { errors, extensions };
    return { status: answer.status, headers, body };
  }

  /**
   * The estimate is a function of the document and the variables: computed once per variable set
   * of a prepared operation (a few sets are kept per operation; a dashboard sends the same ones).
   */
  private requestedCost({ prepared, variables }: Admitted): number {
    const key = variablesKey(variables);
    if (key === undefined)
      return estimateCost(this.schema, prepared.document, prepared.definition, variables);
    let known = this.costs.get(prepared);
    if (!known)
      this.costs.set(prepared, (known = new Lru<string, number>({ maxEntries: COSTS_PER_OPERATION })));
    let cost = known.get(key);
    if (cost === undefined) {
      cost = estimateCost(this.schema, prepared.document, prepared.definition, variables);
      known.set(key, cost);
    }
    return cost;
  }

  private executeOnce(admitted: Admitted, root: unknown, m: OperationMeta): MaybePromise<Answer> {
    let result: MaybePromise<ExecutionResult>;
    try {
      result = operationSpan(this.services.telemetry, admitted.prepared.label, () =>
        this.results(admitted, root),
      );
    } catch (e) {
      return this.failed(e, m);
    }
    return isPromise(result)
      ? result.then(
          (r) => this.answerTo(this.worded(r, admitted), m),
          (e: unknown) => this.failed(e, m),
        )
      : this.answerTo(this.worded(result, admitted), m);
  }

  /** The execution's result, or the one kept for the current version of the data it reads. */
  private results(admitted: Admitted, root: unknown): MaybePromise<ExecutionResult> {
    const { prepared, context, variables } = admitted;
    const execute: Execute = (notes) => {
      if (notes) context.recorded = notes;
      return prepared.compiled.query(root, context, variables);
    };
    const principal = context.principal;
    // Also with kept answers off: the port-call read model reads the same versions.
    if (prepared.operationType === 'mutation' && principal) return this.writing(principal, execute);
    const keepable = prepared.answers;
    if (!this.answers || !keepable || root !== undefined || !principal || !keptWith(keepable, variables))
      return execute();
    const source = keepable.source;
    const scope = source.scopeOf(principal);
    const vars = variablesKey(variables);
    if (scope === undefined || vars === undefined) return execute();
    const key = `${prepared.id}\u0000${scope}\u0000${vars}`;
    // Its resolvers note what they read, kept with the result (answers.ts, "Carried").
    return this.answers.answer(source, this.services, scope, key, execute, keepable.recorded);
  }

  /**
   * Runs a mutation, then tells every answer source that this caller wrote (even when a field
   * failed: the fields before it may have committed), before the caller can send its next request.
   */
  private writing(
    principal: Principal,
    execute: () => MaybePromise<ExecutionResult>,
  ): MaybePromise<ExecutionResult> {
    const written = () => {
      for (const source of this.answerSources) source.written?.(this.services, principal);
    };
    let result: MaybePromise<ExecutionResult>;
    try {
      result = execute();
    } catch (e) {
      written();
      throw e;
    }
    if (isPromise(result)) return result.finally(written);
    written();
    return result;
  }

  /**
   * graphql-jit names only the innermost field when a variable does not coerce ('Variable
   * "$serviceType" got invalid value …' for `$input.serviceType`). On that (rare) failure the
   * variables are coerced again with graphql-js's public `coerceInputValue`, which reports the path:
   * every door then gives graphql-js's wording, and the error carries the variable and the path
   * (`extensions.variable`, `extensions.path`) so a REST shim can name the field as its caller sent it.
   */
  private worded(result: ExecutionResult, admitted: Admitted): ExecutionResult {
    if (result.data !== undefined || !result.errors?.length) return result;
    const errors = coercionErrors(this.schema, admitted.prepared.definition, admitted.variables ?? {});
    return errors.length > 0 ? { errors } : result;
  }

  /**
   * A streaming route's check: the access rule and admission of the schema field whose work it
   * does, so a rule lives in one place. Returns the principal and the rate-limit headers; throws
   * the AppError a shim of that field would answer with.
   */
  async admitField(
    coordinate: string,
    principal: Principal | null,
    /** The access rule was checked when the work was granted (a signed URL): spend the budget only. */
    accessChecked = false,
  ): Promise<{ principal: Principal; headers: Record<string, string> }> {
    const requirements = this.policy.fieldRequirements(coordinate);
    const denied = accessChecked ? [] : checkAccess(requirements, principal);
    if (denied.length > 0 || !principal) {
      const error = combineDenials(denied);
      throw principal
        ? withHeaders(error, await this.services.admission.peek(principal, requirements))
        : error;
    }
    const { headers } = await this.services.admission.admit(principal, requirements);
    return { principal, headers };
  }

  /** The caller's rate-limit headers for an operation, spending nothing: for a call refused before it ran. */
  budgetHeaders(prepared: PreparedOperation, principal: Principal): Promise<Record<string, string>> {
    return this.services.admission.peek(principal, prepared.requirements);
  }

  /** Formats an execution result as the answer a door sends (also for a subscription's source stream). */
  answerTo(result: ExecutionResult, meta: OperationMeta): Answer {
    if (!result.errors || result.errors.length === 0) {
      return { status: 200, headers: meta.headers, body: { data: result.data } };
    }
    // No data at all means nothing executed: the variables did not coerce. That is the caller's
    // input, answered 400 BAD_USER_INPUT with graphql's own message, as Apollo Server does.
    const coercion = result.data === undefined;
    const errors = coercion ? result.errors.map(asUserInput) : result.errors;
    const formatted = this.format(errors);
    meta.errorCodes = formatted.map((e) => String(e.extensions?.code));
    // A resolver that met an outage answers SERVICE_UNAVAILABLE in its error; the response carries
    // the same Retry-After as a REST shim's 503 would, so HTTP clients and proxies see it too.
    const retryAfter = formatted.reduce(
      (most, e) => Math.max(most, Number(e.extensions?.retryAfterSeconds) || 0),
      0,
    );
    if (retryAfter > 0) meta.headers['Retry-After'] = String(retryAfter);
    const body: FormattedExecutionResult = coercion
      ? { errors: formatted }
      : { errors: formatted, data: result.data };
    return { status: coercion ? 400 : 200, headers: meta.headers, body };
  }

  private refuse(error: AppError, meta: OperationMeta): Answer {
    Object.assign(meta.headers, error.headers);
    const errors = this.format([toGraphQLError(error)]);
    meta.errorCodes = [error.code];
    return { status: error.status, headers: meta.headers, body: { errors } };
  }

  /** The executor itself threw (not a resolver): a fault of ours unless it is an AppError. */
  private failed(e: unknown, meta: OperationMeta): Answer {
    if (isAppError(e)) return this.refuse(e, meta);
    const errors = this.format([toGraphQLErrorFrom(e)]);
    meta.errorCodes = ['INTERNAL_SERVER_ERROR'];
    return { status: 500, headers: meta.headers, body: { errors } };
  }

  private refuseThrown(e: unknown, meta: OperationMeta): Answer {
    if (!isAppError(e)) throw e;
    return this.refuse(e, meta);
  }

  format(errors: readonly GraphQLError[]): GraphQLFormattedError[] {
    return formatErrors(errors, (e) => this.services.logger.error({ err: e }, 'unexpected GraphQL error'));
  }
}

let lastReset: { seconds: string | undefined; iso: string } = { seconds: undefined, iso: '' };

/** `X-RateLimit-Reset` (epoch seconds) as ISO-8601; every call of a minute window has the same one. */
function isoOfEpochSeconds(seconds: string | undefined): string {
  if (lastReset.seconds !== seconds)
    lastReset = { seconds, iso: new Date(Number(seconds) * 1000).toISOString() };
  return lastReset.iso;
}

/** Variables longer than this as JSON are not used as a key: nothing is kept for them. */
const MAX_VARIABLES_KEY = 2048;
/** The last variables keyed, and their key: the cost memo and the kept answers ask in turn. */
let lastKeyed: { variables: object; key: string } | undefined;

/**
 * The request's variables as a memo key (JSON), written once per request for both the cost memo
 * and the kept answers (a one-entry memo: both ask within the same request, and a WeakMap entry
 * per request cost more than it saved); undefined when too long to keep (an ingestion's whole
 * file, say), so a large input is never retained as a key.
 */
function variablesKey(variables: Record<string, unknown> | undefined): string | undefined {
  if (variables === undefined) return '';
  if (lastKeyed?.variables === variables) return lastKeyed.key;
  const text = JSON.stringify(variables);
  if (text.length > MAX_VARIABLES_KEY) return undefined;
  lastKeyed = { variables, key: text };
  return text;
}

/** When a plan and scopes are both missing, one error says both (402 wins the status). */
export function combineDenials(errors: AppError[]): AppError {
  const [first, ...rest] = errors as [AppError, ...AppError[]];
  if (rest.length === 0) return first;
  const details = Object.assign({}, ...errors.map((e) => e.details));
  return new AppError(first.code, errors.map((e) => e.message).join('. '), details);
}

function rejection(errors: GraphQLError[]): RejectedOperation {
  const codes = errors.map((e) => String(e.extensions?.code));
  // Request errors are GraphQL's own wording with a code: the formatter passes them through unchanged.
  return {
    kind: 'rejected',
    status: 400,
    body: { errors: formatErrors(errors, () => undefined) },
    codes,
  };
}

/** The same error Apollo Server gives for a syntax error, so both HTTP doors agree. */
function parseFailure(e: unknown): GraphQLError {
  const error = e instanceof GraphQLError ? e : new GraphQLError(String(e));
  return new GraphQLError(error.message, {
    source: error.source,
    positions: error.positions,
    originalError: error,
    extensions: { ...error.extensions, code: 'GRAPHQL_PARSE_FAILED' },
  });
}

function validationFailure(error: GraphQLError): GraphQLError {
  return new GraphQLError(error.message, {
    nodes: error.nodes,
    originalError: error.originalError ?? error,
    extensions: { ...error.extensions, code: 'GRAPHQL_VALIDATION_FAILED' },
  });
}

function asUserInput(error: GraphQLError): GraphQLError {
  // A resolver's own failure keeps its cause: the formatter decides whether it may be shown.
  if (error.extensions?.code || error.originalError) return error;
  return withCode(error, 'BAD_USER_INPUT');
}

function withCode(error: GraphQLError, code: string): GraphQLError {
  return new GraphQLError(error.message, {
    nodes: error.nodes,
    source: error.source,
    positions: error.positions,
    path: error.path,
    originalError: error.originalError,
    extensions: { ...(error.extensions ?? {}), code },
  });
}

function toGraphQLErrorFrom(e: unknown): GraphQLError {
  if (e instanceof GraphQLError) return e;
  if (isAppError(e)) return toGraphQLError(e);
  return new GraphQLError(e instanceof Error ? e.message : String(e), {
    originalError: e instanceof Error ? e : undefined,
  });
}

/** graphql-js's coercion of an operation's variables, its wording, with the failing path kept. */
function coercionErrors(
  schema: GraphQLSchema,
  definition: OperationDefinitionNode,
  inputs: Record<string, unknown>,
): GraphQLError[] {
  const errors: GraphQLError[] = [];
  for (const node of definition.variableDefinitions ?? []) {
    const name = node.variable.name.value;
    const type = typeFromAST(schema, node.type);
    if (!type || !isInputType(type)) continue; // validation has refused such documents already
    const fail = (message: string, path: ReadonlyArray<string | number> = []) =>
      errors.push(
        new GraphQLError(message, {
          nodes: node,
          extensions: { code: 'BAD_USER_INPUT', variable: name, path: [...path] },
        }),
      );
    if (!Object.hasOwn(inputs, name)) {
      if (isNonNullType(type) && !node.defaultValue)
        fail(`Variable "$${name}" of required type "${print(node.type)}" was not provided.`);
      continue;
    }
    const value = inputs[name];
    if (value === null && isNonNullType(type)) {
      fail(`Variable "$${name}" of non-null type "${print(node.type)}" must not be null.`);
      continue;
    }
    coerceInputValue(value, type, (path, invalid, error) => {
      const at = path.length > 0 ? ` at "${name}${pathText(path)}"` : '';
      fail(`Variable "$${name}" got invalid value ${shown(invalid)}${at}; ${error.message}`, path);
    });
  }
  return errors;
}

function pathText(path: ReadonlyArray<string | number>): string {
  return path.map((key) => (typeof key === 'number' ? `[${key}]` : `.${key}`)).join('');
}

function shown(value: unknown): string {
  const json = JSON.stringify(value);
  if (json === undefined) return String(value);
  return json.length > 100 ? `${json.slice(0, 97)}...` : json;
}

/**
 * The one choice of the operation a request runs, with graphql's public getOperationAST (the
 * function graphql-js's execute and Apollo Server use). When there is none, graphql-js's own
 * wording and Apollo's code: OPERATION_RESOLUTION_FAILURE, a client error (400) on every door.
 */
export function chooseOperation(
  document: DocumentNode,
  operationName: string | null | undefined,
): OperationDefinitionNode | GraphQLError {
  const operation = getOperationAST(document, operationName);
  if (operation) return operation;
  const message =
    operationName != null
      ? `Unknown operation named "${operationName}".`
      : document.definitions.some((d) => d.kind === Kind.OPERATION_DEFINITION)
        ? 'Must provide operation name if query contains multiple operations.'
        : 'Must provide an operation.';
  return new GraphQLError(message, { extensions: { code: 'OPERATION_RESOLUTION_FAILURE' } });
}
