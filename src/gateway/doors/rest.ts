import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import {
  Kind,
  parse,
  visit,
  type DefinitionNode,
  type DocumentNode,
  type FragmentDefinitionNode,
  type GraphQLFormattedError,
  type OperationDefinitionNode,
} from 'graphql';
import {
  AppError,
  ERROR_CODES,
  badInput,
  notFound,
  withHeaders,
  type ErrorCode,
} from '../../kernel/errors.js';
import { andThen, type MaybePromise } from '../../kernel/maybe-async.js';
import type { Principal } from '../../kernel/principal.js';
import type { OperationMeta } from '../schema/context.js';
import type { Operations, PreparedOperation } from '../pipeline/operation.js';
import type { ParamSpec, RestRoute } from './rest-routes.js';
import { bodyJson, compileShaper, type RouteShaper } from './rest-shape.js';

export const REST_OPERATIONS_DIR = join(
  import.meta.dirname,
  '..',
  '..',
  '..',
  'schema',
  'operations',
  'rest',
);

/** Reads every named operation in the directory, each as a standalone document with the fragments it uses. */
export function loadOperations(dir: string = REST_OPERATIONS_DIR): Map<string, DocumentNode> {
  const definitions: DefinitionNode[] = [];
  for (const file of readdirSync(dir)
    .filter((f) => f.endsWith('.graphql'))
    .sort()) {
    definitions.push(...parse(readFileSync(join(dir, file), 'utf8')).definitions);
  }
  const fragments = new Map<string, FragmentDefinitionNode>();
  for (const d of definitions) if (d.kind === Kind.FRAGMENT_DEFINITION) fragments.set(d.name.value, d);
  const operations = new Map<string, DocumentNode>();
  for (const d of definitions) {
    if (d.kind !== Kind.OPERATION_DEFINITION) continue;
    if (!d.name) throw new Error(`Every operation in ${dir} must be named`);
    if (operations.has(d.name.value)) throw new Error(`Operation ${d.name.value} is defined twice in ${dir}`);
    operations.set(d.name.value, { kind: Kind.DOCUMENT, definitions: [d, ...usedFragments(d, fragments)] });
  }
  return operations;
}

// Exported because trusted documents normalize operations the same way.
export function usedFragments(
  op: OperationDefinitionNode,
  all: Map<string, FragmentDefinitionNode>,
): FragmentDefinitionNode[] {
  const found = new Map<string, FragmentDefinitionNode>();
  const pending: Array<OperationDefinitionNode | FragmentDefinitionNode> = [op];
  while (pending.length > 0) {
    visit(pending.pop()!, {
      FragmentSpread(node) {
        const name = node.name.value;
        const fragment = all.get(name);
        if (fragment && !found.has(name)) {
          found.set(name, fragment);
          pending.push(fragment);
        }
      },
    });
  }
  return [...found.values()];
}

interface PreparedRoute {
  route: RestRoute;
  prepared: PreparedOperation;
  /** `route.result` split at its dots, once. */
  resultPath: string[];
  /** Shapes a fresh result's body in place, compiled from the operation (rest-shape.ts). */
  shaper: RouteShaper | undefined;
}

/**
 * Prepares every route's operation once at start through the one pipeline; a broken route table
 * fails the start-up, never a request.
 */
export function prepareRoutes(
  operations: Operations,
  routes: RestRoute[],
  documents = loadOperations(),
): PreparedRoute[] {
  return routes.map((route) => {
    const document = documents.get(route.operation);
    if (!document)
      throw new Error(`REST route ${route.method} ${route.path}: no operation named ${route.operation}`);
    // Our own documents: demand control is for client-written operations, REST pages are capped at 100.
    const prepared = operations.prepareTrusted(document, route.operation);
    const resultPath = route.result.split('.');
    const shaper = route.shape
      ? compileShaper(route.shape, operations.schema, document, prepared.definition, resultPath)
      : undefined;
    return { route, prepared, resultPath, shaper };
  });
}

/** Registers each prepared route at its path and under the `/api` alias (`/api/v1/...`). */
export function registerRestRoutes(
  app: FastifyInstance,
  operations: Operations,
  prepared: PreparedRoute[],
): void {
  for (const p of prepared) {
    const handler = (request: FastifyRequest, reply: FastifyReply) => runRoute(p, operations, request, reply);
    for (const url of [p.route.path, `/api${p.route.path}`]) {
      app.route({
        method: p.route.method,
        url,
        handler,
        config: { audit: `${p.route.method} ${p.route.path}` },
      });
    }
  }
}

/**
 * Runs one shim call through the pipeline and answers in REST's shape: the result field as the
 * body, or the first error with the status its code maps to. Synchronous end to end when the
 * caller is cached, the counters are local and the resolvers answer from memory.
 */
function runRoute(
  p: PreparedRoute,
  operations: Operations,
  request: FastifyRequest,
  reply: FastifyReply,
): MaybePromise<void> {
  let variables: Record<string, unknown>;
  try {
    variables = bindVariables(p.route, request);
  } catch (e) {
    // A parameter refused before anything ran spends nothing, but the answer still carries the
    // caller's budget, like every other response (the liquidity document's X-RateLimit-* rule).
    const principal = request.principal;
    if (!(e instanceof AppError) || !principal) throw e;
    return operations.budgetHeaders(p.prepared, principal).then((headers) => {
      throw withHeaders(e, headers);
    });
  }
  const meta: OperationMeta = { headers: {} };
  request.gatewayMeta = meta;
  const answer = operations.run(p.prepared, {
    principal: request.principal ?? null,
    requestId: request.id,
    variables,
    meta,
    reportCost: false,
  });
  return andThen(answer, (a) => {
    reply.headers(a.headers);
    const first = a.body.errors?.[0];
    if (first) throw restError(first, p.route);
    const body = pathGet(a.body.data, p.resultPath);
    if ((body === null || body === undefined) && p.route.notFound) {
      const { resource, param } = p.route.notFound;
      throw notFound(resource, String(variables[param] ?? ''));
    }
    const status = p.route.status ?? 200;
    reply.code(status);
    if (status === 204) reply.send();
    else reply.type('application/json; charset=utf-8').send(bodyJson(body, p.route.shape, p.shaper));
  });
}

/** The REST form of a GraphQL error: a variable that did not coerce is named as the HTTP caller sent it. */
function restError(error: GraphQLFormattedError, route: RestRoute): AppError {
  const { variable, path } = (error.extensions ?? {}) as Record<string, unknown>;
  const field = typeof variable === 'string' ? httpFieldOf(route, variable, path) : undefined;
  return answeredError(error, field);
}

/**
 * A GraphQL error of an answer as the AppError that raised it: the same code and message, its
 * other extensions as the details (`field` replacing the variable a value did not coerce for,
 * when given). Codes outside the table (none our own operations can produce) are a fault of ours.
 */
export function answeredError(error: GraphQLFormattedError, field?: string): AppError {
  // The path inside a variable is folded into `field` by the caller; it is no detail of its own.
  const { code, variable, path: _path, ...details } = (error.extensions ?? {}) as Record<string, unknown>;
  if (field !== undefined) details.field = field;
  else if (typeof variable === 'string') details.field = variable;
  // An outage met by a resolver still tells REST clients when to retry.
  const retry: Record<string, string> =
    typeof details.retryAfterSeconds === 'number' ? { 'Retry-After': String(details.retryAfterSeconds) } : {};
  if (typeof code === 'string' && code in ERROR_CODES)
    return new AppError(code as ErrorCode, error.message, details, retry);
  return new AppError('INTERNAL_SERVER_ERROR', 'Internal server error');
}

/** `$input` at `details.quantity` is `details.quantity` of a whole-body input, `event_types[0]` of a named one. */
function httpFieldOf(route: RestRoute, variable: string, path: unknown): string {
  const spec = route.variables?.[variable];
  const head = spec?.from === 'body' && !spec.name ? [] : [spec?.name ?? variable];
  const keys = [...head, ...(Array.isArray(path) ? (path as Array<string | number>) : [])];
  return keys.map((k, i) => (typeof k === 'number' ? `[${k}]` : i === 0 ? k : `.${k}`)).join('') || 'body';
}

/**
 * For hand-written streaming routes (upload, download, export): the access rule and admission of
 * the schema field whose work the route does, through the pipeline's check, with the rate-limit
 * headers on the reply. Returns the principal; throws the same errors a shim would.
 */
export async function authorizeField(
  operations: Operations,
  request: FastifyRequest,
  reply: FastifyReply,
  coordinate: string,
): Promise<Principal> {
  return admitted(operations.admitField(coordinate, request.principal ?? null), reply);
}

/**
 * Admission only, for work whose access was checked when it was granted: a signed URL's PUT spends
 * its creator's budget for the schema field. Headers on the reply.
 */
export async function admitField(
  operations: Operations,
  reply: FastifyReply,
  principal: Principal,
  coordinate: string,
): Promise<Principal> {
  return admitted(operations.admitField(coordinate, principal, true), reply);
}

async function admitted(
  admission: Promise<{ principal: Principal; headers: Record<string, string> }>,
  reply: FastifyReply,
): Promise<Principal> {
  try {
    const { principal, headers } = await admission;
    reply.headers(headers);
    return principal;
  } catch (e) {
    if (e instanceof AppError) reply.headers(e.headers);
    throw e;
  }
}

function pathGet(data: unknown, path: readonly string[]): unknown {
  let current = data;
  for (const key of path) {
    if (current === null || current === undefined) return current;
    current = (current as Record<string, unknown>)[key];
  }
  return current;
}

/** Maps path, query and body onto variables, coercing types; a bad value is a 400 naming the parameter. */
export function bindVariables(route: RestRoute, request: FastifyRequest): Record<string, unknown> {
  const variables: Record<string, unknown> = {};
  const query = (request.query ?? {}) as Record<string, unknown>;
  const params = (request.params ?? {}) as Record<string, unknown>;
  const body = request.body;
  for (const [variable, spec] of Object.entries(route.variables ?? {})) {
    const name = spec.name ?? variable;
    let raw: unknown;
    if (spec.from === 'query') raw = query[name];
    else if (spec.from === 'path') raw = params[name];
    else raw = spec.name ? (isObject(body) ? body[spec.name] : undefined) : body;
    // '' in a query means "not given"; in a JSON body it is a value ("description": "" clears one).
    if (raw === undefined || (raw === '' && spec.from !== 'body')) {
      if (spec.required)
        throw badInput(
          name,
          `is required (${spec.from === 'body' && !spec.name ? 'JSON request body' : `${spec.from} parameter`})`,
        );
      if (spec.default !== undefined) variables[variable] = spec.default;
      continue;
    }
    variables[variable] = coerce(name, spec, raw);
  }
  return variables;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The 400 for a query parameter given more than once (also used by hand-written routes). */
export function repeatedParameter(name: string, count: number): AppError {
  return badInput(name, `must be given once (got ${count} values)`);
}

function coerce(name: string, spec: ParamSpec, raw: unknown): unknown {
  // `?limit=10&limit=20` has no single meaning: refuse rather than guess which one was meant.
  if (Array.isArray(raw) && spec.from === 'query' && spec.type !== 'stringList')
    throw repeatedParameter(name, raw.length);
  switch (spec.type) {
    case 'string':
      if (typeof raw !== 'string') throw badInput(name, 'must be a string');
      return spec.enum ? raw.trim().toUpperCase().replace(/[-\s]/g, '_') : raw;
    case 'int':
    case 'float': {
      const value =
        typeof raw === 'number' ? raw : typeof raw === 'string' && raw.trim() !== '' ? Number(raw) : NaN;
      if (!Number.isFinite(value) || (spec.type === 'int' && !Number.isInteger(value))) {
        throw badInput(
          name,
          `must be ${spec.type === 'int' ? 'an integer' : 'a number'} (got '${String(raw)}')`,
        );
      }
      if ((spec.min !== undefined && value < spec.min) || (spec.max !== undefined && value > spec.max)) {
        throw badInput(name, `must be between ${spec.min ?? '-∞'} and ${spec.max ?? '∞'} (got ${value})`);
      }
      return value;
    }
    case 'boolean':
      if (raw === true || raw === 'true' || raw === '1') return true;
      if (raw === false || raw === 'false' || raw === '0') return false;
      throw badInput(name, `must be true or false (got '${String(raw)}')`);
    case 'stringList': {
      // A list of strings, not of lists or objects: `[["a"]]` is refused, not flattened.
      if (Array.isArray(raw) && raw.some((v) => typeof v !== 'string'))
        throw badInput(name, 'must be a list of strings (got a nested list, object, number or null)');
      const items = (Array.isArray(raw) ? raw : [raw])
        .flatMap((v) => String(v).split(','))
        .map((s) => s.trim())
        .filter(Boolean);
      return items;
    }
    case 'json':
      if (!isObject(raw) && !Array.isArray(raw)) throw badInput(name, 'must be a JSON object');
      return raw;
  }
}
