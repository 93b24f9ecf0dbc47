import {
  Kind,
  getOperationAST,
  getNamedType,
  isEnumType,
  isInputObjectType,
  isListType,
  isNonNullType,
  isScalarType,
  typeFromAST,
  type DocumentNode,
  type FragmentDefinitionNode,
  type GraphQLField,
  type GraphQLInputType,
  type GraphQLOutputType,
  type GraphQLSchema,
  type OperationDefinitionNode,
  type SelectionSetNode,
  isObjectType,
  type GraphQLObjectType,
  type GraphQLNamedType,
  isInterfaceType,
} from 'graphql';
import { packageVersion } from '../../kernel/package-root.js';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { ERROR_CODES } from '../../kernel/errors.js';
import { SCOPES } from '../../kernel/scopes.js';
import type { DomainModule } from '../schema/module.js';
import type { AccessPolicy } from '../pipeline/access.js';
import { loadOperations } from './rest.js';
import type { ParamSpec, RestRoute } from './rest-routes.js';
import { snakeCaseKey, type RestShape } from './rest-shape.js';

/** A JSON Schema (2020-12, the dialect of OpenAPI 3.1) or OpenAPI object: plain JSON. */
export type Json = { [key: string]: unknown };

/** A route the table cannot describe (streaming, OAuth): its operation object, written beside its code. */
export interface DescribedRoute {
  method: 'get' | 'post' | 'put' | 'patch' | 'delete';
  /** OpenAPI path, e.g. `/v1/documents/{id}/content`. */
  path: string;
  operation: Json;
}

export interface OpenApiInputs {
  schema: GraphQLSchema;
  policy: AccessPolicy;
  /** Each module's shim table, under the module's name (the tag). */
  routes: Array<{ tag: string; routes: RestRoute[] }>;
  operations: Map<string, DocumentNode>;
  described: Array<{ tag: string; routes: DescribedRoute[] }>;
  /** What each tag (module) is about. */
  tagDescriptions: Record<string, string>;
  version: string;
}

const ERROR_RESPONSES: Record<number, string> = {
  400: 'The request is malformed: a parameter or body field is missing or invalid (named in the message)',
  401: 'Missing or invalid credentials',
  402: "The account's plan does not include this call",
  403: 'The credential lacks a required scope (named in the message)',
  404: 'No such resource',
  409: 'The change conflicts with the current state',
  429: 'Rate limit or monthly quota exceeded (Retry-After says when to try again)',
  500: 'Unexpected server error',
  503: 'The database is unreachable, or the operation ran past its deadline (DEADLINE_EXCEEDED); Retry-After when known',
};

/**
 * The OpenAPI 3.1 document of the REST API, derived from what serves it: the shim tables
 * (paths, parameters, bodies, statuses), the named operations (their aliases are the JSON field
 * names, their selection sets the response shapes), the schema's types, its access rules
 * (security and scopes) and the error table. Routes the tables cannot describe bring their own
 * operation objects.
 */
export function openApiDocument(inputs: OpenApiInputs): Json {
  const paths: Record<string, Record<string, Json>> = {};
  const add = (path: string, method: string, operation: Json) => {
    (paths[path] ??= {})[method] = operation;
  };
  for (const { tag, routes } of inputs.routes) {
    for (const route of routes)
      add(openApiPath(route.path), route.method.toLowerCase(), routeOperation(inputs, tag, route));
  }
  for (const { tag, routes } of inputs.described) {
    for (const route of routes) add(route.path, route.method, { tags: [tag], ...route.operation });
  }
  const sorted = Object.fromEntries(Object.entries(paths).sort(([a], [b]) => a.localeCompare(b)));
  return {
    openapi: '3.1.0',
    info: {
      title: 'tidegate REST API',
      version: inputs.version,
      description:
        'REST shims over the tidegate GraphQL schema (port operations, liquidity scoring, webhooks) and the OAuth 2.0 endpoints. Every /v1 path is also served under /api (/api/v1/...). Generated from the route tables and the schema: `npm run schema`.',
    },
    servers: [{ url: '/' }],
    tags: [...inputs.routes.map((r) => r.tag), ...inputs.described.map((r) => r.tag)]
      .filter((t, i, all) => all.indexOf(t) === i)
      .map((name) => ({
        name,
        ...(inputs.tagDescriptions[name] ? { description: inputs.tagDescriptions[name] } : {}),
      })),
    paths: sorted,
    components: {
      securitySchemes: {
        apiKey: { type: 'apiKey', in: 'header', name: 'X-API-Key', description: 'An API key (tg_...)' },
        bearer: {
          type: 'http',
          scheme: 'bearer',
          description: 'An API key or an OAuth 2.0 access token (JWT) as a bearer token',
        },
        oauth2: {
          type: 'oauth2',
          flows: {
            authorizationCode: {
              authorizationUrl: '/oauth/authorize',
              tokenUrl: '/oauth/token',
              refreshUrl: '/oauth/token',
              scopes: SCOPES,
            },
            clientCredentials: { tokenUrl: '/oauth/token', scopes: SCOPES },
          },
        },
      },
      schemas: {
        Error: {
          type: 'object',
          required: ['error'],
          properties: {
            error: {
              type: 'object',
              required: ['code', 'message', 'requestId'],
              properties: {
                code: {
                  type: 'string',
                  enum: [...new Set(Object.values(ERROR_CODES).map((c) => c.restCode))],
                },
                message: { type: 'string' },
                requestId: { type: 'string', description: 'Also in the X-Request-Id response header' },
                details: {
                  type: 'object',
                  description: 'Machine-readable facts, e.g. field or requiredScopes',
                },
              },
            },
          },
        },
      },
      responses: Object.fromEntries(
        Object.entries(ERROR_RESPONSES).map(([status, description]) => [
          String(status),
          {
            description,
            content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
          },
        ]),
      ),
    },
  };
}

export const OPENAPI_FILE = join(import.meta.dirname, '..', '..', '..', 'schema', 'openapi.json');

/** The document of this build's modules, as checked in at schema/openapi.json. */
export function gatewayOpenApi(
  schema: GraphQLSchema,
  policy: AccessPolicy,
  modules: readonly DomainModule[],
): Json {
  const pkg = { version: packageVersion() };
  return openApiDocument({
    schema,
    policy,
    operations: loadOperations(),
    routes: modules.filter((m) => m.restRoutes).map((m) => ({ tag: m.name, routes: m.restRoutes! })),
    described: modules.filter((m) => m.openApi).map((m) => ({ tag: m.name, routes: m.openApi! })),
    tagDescriptions: Object.fromEntries(modules.flatMap((m) => (m.summary ? [[m.name, m.summary]] : []))),
    version: pkg.version,
  });
}

/** The checked-in text: two-space JSON and a final newline. */
export function printOpenApi(document: Json): string {
  return JSON.stringify(document, null, 2) + '\n';
}

/** GET /openapi.json: the document, serialized once. */
export function registerOpenApiRoute(app: FastifyInstance, document: Json): void {
  const body = printOpenApi(document);
  app.get('/openapi.json', (_request, reply) => {
    reply.type('application/json; charset=utf-8').send(body);
  });
}

/** `/v1/protocols/:slug` → `/v1/protocols/{slug}` */
export function openApiPath(path: string): string {
  return path.replace(/:(\w+)/g, '{$1}');
}

function routeOperation(inputs: OpenApiInputs, tag: string, route: RestRoute): Json {
  const document = inputs.operations.get(route.operation);
  if (!document) throw new Error(`REST route ${route.method} ${route.path}: no operation ${route.operation}`);
  const operation = getOperationAST(document, route.operation);
  if (!operation)
    throw new Error(
      `REST route ${route.method} ${route.path}: no operation ${route.operation} in its document`,
    );
  const fragments = new Map(
    document.definitions
      .filter((d): d is FragmentDefinitionNode => d.kind === Kind.FRAGMENT_DEFINITION)
      .map((f) => [f.name.value, f]),
  );
  const requirements = inputs.policy.requirements(document, operation);
  const variableType = (name: string) => {
    const definition = operation.variableDefinitions?.find((v) => v.variable.name.value === name);
    return definition
      ? (typeFromAST(inputs.schema, definition.type as never) as GraphQLInputType)
      : undefined;
  };

  const parameters: Json[] = [];
  const bodyProperties: Record<string, Json> = {};
  const bodyRequired: string[] = [];
  let wholeBody: Json | undefined;
  const pathNames = [...route.path.matchAll(/:(\w+)/g)].map((m) => m[1]!);
  for (const [variable, spec] of Object.entries(route.variables ?? {})) {
    const name = spec.name ?? variable;
    if (spec.from === 'body') {
      const schema = paramSchema(spec, variableType(variable));
      if (!spec.name) wholeBody = schema;
      else {
        bodyProperties[name] = schema;
        if (spec.required) bodyRequired.push(name);
      }
      continue;
    }
    parameters.push({
      name,
      in: spec.from,
      required: spec.from === 'path' || Boolean(spec.required),
      schema: paramSchema(spec, variableType(variable)),
      ...(spec.type === 'stringList' ? { style: 'form', explode: false } : {}),
    });
  }
  for (const name of pathNames) {
    if (!parameters.some((p) => p.name === name && p.in === 'path'))
      parameters.push({ name, in: 'path', required: true, schema: { type: 'string' } });
  }

  const status = route.status ?? 200;
  const responses: Record<string, Json> = {};
  if (status === 204) responses['204'] = { description: 'Done; no body' };
  else {
    const result = shapedSchema(
      resultSchema(inputs.schema, operation, fragments, route.result.split('.')),
      route.shape,
    );
    responses[String(status)] = {
      description: status === 201 ? 'Created' : status === 202 ? 'Accepted' : 'OK',
      content: { 'application/json': { schema: route.notFound ? nonNull(result) : result } },
    };
  }
  const errorStatuses = [400, 401, 429, 500, 503];
  if (requirements.plan) errorStatuses.push(402);
  if (requirements.scopes.length > 0) errorStatuses.push(403);
  if (route.notFound || pathNames.length > 0) errorStatuses.push(404);
  if (requirements.operationType === 'mutation') errorStatuses.push(409);
  for (const s of errorStatuses.sort()) responses[String(s)] = { $ref: `#/components/responses/${s}` };

  const scopes = [...new Set(requirements.scopes.flatMap((alternatives) => alternatives[0] ?? []))];
  const scopeNote =
    requirements.scopes.length > 0
      ? ` Scopes: ${requirements.scopes.map((alts) => alts.map((all) => all.join(' + ')).join(' or ')).join('; ')}.`
      : '';
  const planNote = requirements.plan ? ` Plan: ${requirements.plan} or higher.` : '';
  const body =
    wholeBody ??
    (Object.keys(bodyProperties).length > 0 ? objectSchema(bodyProperties, bodyRequired) : undefined);
  return {
    tags: [tag],
    operationId: route.operation.replace(/^Rest/, ''),
    summary: `${route.method} ${route.path}`,
    description: `Runs the GraphQL operation ${route.operation} (schema/operations/rest).${scopeNote}${planNote}`,
    ...(parameters.length > 0 ? { parameters } : {}),
    ...(body
      ? {
          requestBody: {
            required: Boolean(wholeBody) || bodyRequired.length > 0,
            content: { 'application/json': { schema: body } },
          },
        }
      : {}),
    responses,
    security:
      requirements.authenticated || scopes.length > 0
        ? [{ apiKey: [] }, { bearer: [] }, { oauth2: scopes }]
        : [],
  };
}

/** A parameter's schema from its HTTP-side type, refined by the GraphQL variable it feeds. */
function paramSchema(spec: ParamSpec, graphqlType: GraphQLInputType | undefined): Json {
  const bounds = {
    ...(spec.min !== undefined ? { minimum: spec.min } : {}),
    ...(spec.max !== undefined ? { maximum: spec.max } : {}),
    ...(spec.default !== undefined ? { default: spec.default } : {}),
  };
  switch (spec.type) {
    case 'int':
      return { type: 'integer', ...bounds };
    case 'float':
      return { type: 'number', ...bounds };
    case 'boolean':
      return { type: 'boolean', ...bounds };
    case 'stringList':
      return { type: 'array', items: { type: 'string' }, ...bounds };
    case 'json':
      return graphqlType ? stripNull(inputSchema(graphqlType)) : {};
    case 'string': {
      const named = graphqlType && getNamedType(graphqlType);
      if (named && isEnumType(named)) {
        const values = named.getValues().map((v) => v.name);
        // Read in any case, '-' or ' ' for '_' (ParamSpec.enum): an enum of one spelling would refuse the others.
        if (spec.enum)
          return {
            type: 'string',
            description: `One of ${values.map((v) => v.toLowerCase().replace(/_/g, '-')).join(', ')} (any case; - or space for _)`,
            ...bounds,
          };
        return { type: 'string', enum: values, ...bounds };
      }
      return { type: 'string', ...bounds };
    }
  }
}

function inputSchema(type: GraphQLInputType): Json {
  if (isNonNullType(type)) return nonNull(inputSchema(type.ofType));
  if (isListType(type)) return nullable({ type: 'array', items: inputSchema(type.ofType) });
  if (isInputObjectType(type)) {
    const properties: Record<string, Json> = {};
    const required: string[] = [];
    for (const field of Object.values(type.getFields())) {
      properties[field.name] = withDescription(inputSchema(field.type), field.description);
      if (isNonNullType(field.type) && field.defaultValue === undefined) required.push(field.name);
    }
    return nullable({ ...objectSchema(properties, required), additionalProperties: false });
  }
  return nullable(leafSchema(type));
}

/** Follows the route's `result` path through the operation's selections to the body's schema. */
function resultSchema(
  schema: GraphQLSchema,
  operation: OperationDefinitionNode,
  fragments: Map<string, FragmentDefinitionNode>,
  path: string[],
): Json {
  const root = schema.getRootType(operation.operation)!;
  let type: GraphQLOutputType = root;
  let selections: SelectionSetNode | undefined = operation.selectionSet;
  for (const key of path) {
    const named = getNamedType(type) as GraphQLObjectType;
    const found: SelectedField | undefined = fieldsOf(schema, named, selections!, fragments).find(
      (f) => f.key === key,
    );
    if (!found?.field)
      throw new Error(`operation ${operation.name?.value}: no field '${key}' on the result path`);
    type = found.field.type;
    selections = found.selections;
  }
  return outputSchema(schema, type, selections, fragments);
}

interface SelectedField {
  key: string;
  /** Undefined for `__typename`. */
  field?: GraphQLField<unknown, unknown>;
  selections?: SelectionSetNode;
  /** Selected only for some of the abstract type's members. */
  conditional: boolean;
}

function fieldsOf(
  schema: GraphQLSchema,
  type: GraphQLNamedType,
  selectionSet: SelectionSetNode,
  fragments: Map<string, FragmentDefinitionNode>,
  conditional = false,
): SelectedField[] {
  const out: SelectedField[] = [];
  for (const selection of selectionSet.selections) {
    if (selection.kind === Kind.FIELD) {
      const name = selection.name.value;
      const key = selection.alias?.value ?? name;
      if (name === '__typename') {
        out.push({ key, conditional });
        continue;
      }
      const owner = type as GraphQLObjectType;
      const field = owner.getFields()[name];
      if (!field) throw new Error(`${type.name} has no field ${name}`);
      out.push({ key, field, selections: selection.selectionSet, conditional });
      continue;
    }
    const fragment =
      selection.kind === Kind.FRAGMENT_SPREAD ? fragments.get(selection.name.value)! : selection;
    const condition = fragment.typeCondition ? schema.getType(fragment.typeCondition.name.value)! : type;
    const narrower = condition.name !== type.name && !(isInterfaceType(condition) && isObjectType(type));
    out.push(...fieldsOf(schema, condition, fragment.selectionSet, fragments, conditional || narrower));
  }
  return out;
}

function outputSchema(
  schema: GraphQLSchema,
  type: GraphQLOutputType,
  selections: SelectionSetNode | undefined,
  fragments: Map<string, FragmentDefinitionNode>,
  description?: string | null,
): Json {
  if (isNonNullType(type))
    return nonNull(outputSchema(schema, type.ofType, selections, fragments, description));
  if (isListType(type))
    return nullable({ type: 'array', items: outputSchema(schema, type.ofType, selections, fragments) });
  if (!selections) return withDescription(nullable(leafSchema(type)), description);
  const properties: Record<string, Json> = {};
  const required: string[] = [];
  for (const selected of fieldsOf(schema, type as GraphQLNamedType, selections, fragments)) {
    if (!selected.field) {
      properties[selected.key] = { type: 'string' };
      required.push(selected.key);
      continue;
    }
    properties[selected.key] = outputSchema(
      schema,
      selected.field.type,
      selected.selections,
      fragments,
      selected.field.description,
    );
    if (!selected.conditional && !required.includes(selected.key)) required.push(selected.key);
  }
  // Exactly the selected fields: a field the operation does not select is never in the answer.
  return withDescription(
    nullable({ ...objectSchema(properties, required), additionalProperties: false }),
    description,
  );
}

function leafSchema(type: GraphQLInputType | GraphQLOutputType): Json {
  const named = getNamedType(type);
  if (isEnumType(named)) return { type: 'string', enum: named.getValues().map((v) => v.name) };
  if (!isScalarType(named)) throw new Error(`${named.name} needs a selection`);
  switch (named.name) {
    case 'Int':
      return { type: 'integer' };
    case 'Float':
      return { type: 'number' };
    case 'Boolean':
      return { type: 'boolean' };
    case 'DateTimeISO':
      return { type: 'string', format: 'date-time' };
    case 'JSONObject':
      return { type: 'object' };
    default:
      return { type: 'string' };
  }
}

function objectSchema(properties: Record<string, Json>, required: string[]): Json {
  return { type: 'object', properties, ...(required.length > 0 ? { required } : {}) };
}

/** GraphQL types are nullable unless wrapped; JSON Schema types are not: add 'null'. */
function nullable(schema: Json): Json {
  if (schema.enum)
    return { ...schema, type: [schema.type, 'null'], enum: [...(schema.enum as unknown[]), null] };
  if (typeof schema.type === 'string') return { ...schema, type: [schema.type, 'null'] };
  // Any JSON value (a JSON input): null included already.
  return schema;
}

function nonNull(schema: Json): Json {
  return stripNull(schema);
}

function stripNull(schema: Json): Json {
  if (!Array.isArray(schema.type)) return schema;
  const type = (schema.type as string[]).filter((t) => t !== 'null');
  const enumValues = schema.enum ? { enum: (schema.enum as unknown[]).filter((v) => v !== null) } : {};
  return { ...schema, type: type.length === 1 ? type[0] : type, ...enumValues };
}

function withDescription(schema: Json, description: string | null | undefined): Json {
  return description ? { ...schema, description } : schema;
}

/**
 * The response schema after the route's RestShape (rest-shape.ts): snake_case names at every
 * depth, decimal strings sent as numbers, enum values sent lower-case.
 */
function shapedSchema(schema: Json, shape: RestShape | undefined): Json {
  if (!shape) return schema;
  const numbers = new Set(shape.numbers);
  const lower = new Set(shape.lowerCase);
  const rename = (key: string) => (shape.snakeCaseKeys ? snakeCaseKey(key) : key);
  const walk = (node: Json, name?: string): Json => {
    let out: Json = { ...node };
    if (out.items) out.items = walk(out.items as Json, name);
    if (out.properties) {
      out.properties = Object.fromEntries(
        Object.entries(out.properties as Record<string, Json>).map(([key, value]) => [
          rename(key),
          walk(value, rename(key)),
        ]),
      );
      if (out.required) out.required = (out.required as string[]).map(rename);
    }
    const types = ([] as unknown[]).concat(out.type ?? []);
    if (name && numbers.has(name) && types.includes('string')) {
      out = { ...out, type: types.length > 1 ? ['number', 'null'] : 'number' };
    }
    if (name && lower.has(name) && out.enum) {
      out = {
        ...out,
        enum: (out.enum as Array<string | null>).map((v) => (v === null ? v : v.toLowerCase())),
      };
    }
    return out;
  };
  return walk(schema);
}
