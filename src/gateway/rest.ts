import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import {
  Kind,
  parse,
  validate,
  visit,
  type DefinitionNode,
  type DocumentNode,
  type FragmentDefinitionNode,
  type GraphQLSchema,
  type OperationDefinitionNode,
} from 'graphql';
import { compileQuery, isCompiledQuery, type CompiledQuery } from 'graphql-jit';
import { AppError, badInput, notFound, withHeaders } from '../kernel/errors.js';
import { andThen, type MaybePromise } from '../kernel/maybe-async.js';
import type { Principal } from '../kernel/principal.js';
import { checkAccess, type AccessPolicy, type Requirements } from './access.js';
import { createContext, type AppServices } from './context.js';
import { appErrorOf } from './errors.js';
import type { ParamSpec, RestRoute } from './rest-routes.js';

export const REST_OPERATIONS_DIR = join(import.meta.dirname, '..', '..', 'schema', 'operations', 'rest');

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

function usedFragments(
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
  requirements: Requirements;
  compiled: CompiledQuery;
  /** `route.result` split at its dots, once. */
  resultPath: string[];
}

/**
 * Parses, validates and compiles every route's operation once at start; a broken route table
 * fails the start-up, never a request.
 */
export function prepareRoutes(
  schema: GraphQLSchema,
  policy: AccessPolicy,
  routes: RestRoute[],
  operations = loadOperations(),
): PreparedRoute[] {
  return routes.map((route) => {
    const document = operations.get(route.operation);
    if (!document)
      throw new Error(`REST route ${route.method} ${route.path}: no operation named ${route.operation}`);
    // Our own documents: demand control is for client-written operations, REST pages are capped at 100.
    const errors = validate(schema, document);
    if (errors.length > 0) {
      throw new Error(
        `REST operation ${route.operation} is invalid: ${errors.map((e) => e.message).join('; ')}`,
      );
    }
    const compiled = compileQuery(schema, document, route.operation);
    if (!isCompiledQuery(compiled)) {
      throw new Error(
        `REST operation ${route.operation} does not compile: ${compiled.errors?.map((e) => e.message).join('; ')}`,
      );
    }
    return {
      route,
      requirements: policy.requirements(document, route.operation),
      compiled,
      resultPath: route.result.split('.'),
    };
  });
}

/** Registers each prepared route at its path and under the `/api` alias (`/api/v1/...`). */
export function registerRestRoutes(
  app: FastifyInstance,
  services: AppServices,
  prepared: PreparedRoute[],
): void {
  for (const p of prepared) {
    const handler = (request: FastifyRequest, reply: FastifyReply) => runRoute(p, services, request, reply);
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
 * Runs one shim call. Synchronous end to end when the caller is cached, the counters are local
 * and the resolvers answer from memory (a vessel lookup): the common case pays no promise.
 */
function runRoute(
  p: PreparedRoute,
  services: AppServices,
  request: FastifyRequest,
  reply: FastifyReply,
): MaybePromise<void> {
  const principal = request.principal ?? null;
  const denied = checkAccess(p.requirements, principal);
  if (denied.length > 0)
    return refusal(services, principal, p.requirements, denied[0]!).then((error) => {
      throw error;
    });
  if (!principal) return execute(p, services, request, reply, null);
  return andThen(services.admission.admit(principal, p.requirements), (admitted) => {
    reply.headers(admitted.headers);
    return execute(p, services, request, reply, principal);
  });
}

function execute(
  p: PreparedRoute,
  services: AppServices,
  request: FastifyRequest,
  reply: FastifyReply,
  principal: Principal | null,
): MaybePromise<void> {
  const variables = bindVariables(p.route, request);
  const ctx = createContext(services, request.id, principal);
  return andThen(p.compiled.query(undefined, ctx, variables), (result) => {
    if (result.errors && result.errors.length > 0) throw restErrorOf(result.errors[0], p.route);
    const body = pathGet(result.data, p.resultPath);
    if ((body === null || body === undefined) && p.route.notFound) {
      const { resource, param } = p.route.notFound;
      throw notFound(resource, String(variables[param] ?? ''));
    }
    const status = p.route.status ?? 200;
    reply.code(status);
    if (status === 204) reply.send();
    else reply.type('application/json; charset=utf-8').send(JSON.stringify(body ?? null));
  });
}

/**
 * For hand-written streaming routes (upload, download, export): applies exactly the access rule
 * and admission of the schema field whose work the route does, so the rule lives in one place.
 * Returns the principal; throws the same errors a shim would.
 */
export async function authorizeField(
  services: AppServices,
  request: FastifyRequest,
  reply: FastifyReply,
  coordinate: string,
) {
  const requirements = services.policy.fieldRequirements(coordinate);
  const principal = request.principal ?? null;
  const denied = checkAccess(requirements, principal);
  if (denied.length > 0 || !principal) throw await refusal(services, principal, requirements, denied[0]!);
  await admitField(services, reply, principal, coordinate);
  return principal;
}

/** Admission (plan, rate, quota) of the schema field for `principal`, with its rate-limit headers on the reply. */
export async function admitField(
  services: AppServices,
  reply: FastifyReply,
  principal: Principal,
  coordinate: string,
): Promise<void> {
  const admitted = await services.admission.admit(principal, services.policy.fieldRequirements(coordinate));
  reply.headers(admitted.headers);
}

/** A refused call (401/402/403) still tells a known caller where its rate-limit budget stands. */
export async function refusal(
  services: AppServices,
  principal: Principal | null,
  requirements: Requirements,
  error: AppError,
): Promise<AppError> {
  return principal ? withHeaders(error, await services.admission.peek(principal, requirements)) : error;
}

function restErrorOf(error: unknown, route: RestRoute): AppError {
  const app = appErrorOf(error);
  if (app) return app;
  const message = error instanceof Error ? error.message : String(error);
  // Variable coercion errors from the compiled query are the caller's fault.
  const coercion = coercionError(message, route);
  if (coercion) return coercion;
  throw error;
}

const COERCION = /^Variable "\$(\w+)" got invalid value (.*?); (.*)$/s;
const NOT_PROVIDED = /^Field value\.([\w.]+) of required type (\S+) was not provided\.?$/;
const NOT_DEFINED = /^Field "?(?:value\.)?([\w.]+)"? is not defined by type "?(\w+)"?\.?/;
const EXPECTED = /^Expected type "?([\w![\]]+)"?\.?\s*(.*)$/s;

/**
 * Turns the query engine's variable-coercion wording ('Variable "$input" got invalid value …')
 * into `field: rule`, naming the field the way the HTTP caller sent it.
 */
export function coercionError(message: string, route: RestRoute): AppError | undefined {
  const match = COERCION.exec(message);
  if (!match) return undefined;
  const [, variable, value, reason] = match as unknown as [string, string, string, string];
  const spec = route.variables?.[variable];
  // A variable of the route is named as the caller sent it; anything else is a field of the body.
  const httpName = spec ? (spec.name ?? variable) : variable;
  const missing = NOT_PROVIDED.exec(reason);
  if (missing) return badInput(missing[1]!, `is required (${missing[2]})`);
  const unknown = NOT_DEFINED.exec(reason);
  if (unknown) return badInput(unknown[1]!, 'is not a known field');
  const expected = EXPECTED.exec(reason);
  if (expected) {
    const detail = expected[2]?.replace(/^;\s*/, '').trim();
    const got = detail || (value.length <= 60 ? `got ${value}` : '');
    return badInput(httpName, `must be of type ${expected[1]}${got ? ` (${got})` : ''}`);
  }
  return badInput(httpName, reason);
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
    if (raw === undefined || raw === '') {
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
      return raw;
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
