/**
 * A REST shim is data: method + path + a named operation from schema/operations/rest/ +
 * how path/query/body map to variables + which field of the result is the body.
 */
import type { RestShape } from './rest-shape.js';

export type ParamType = 'string' | 'int' | 'float' | 'boolean' | 'json' | 'stringList';

export interface ParamSpec {
  from: 'query' | 'path' | 'body';
  /** The HTTP-side name (defaults to the variable name). For `body`, omit to pass the whole body. */
  name?: string;
  type: ParamType;
  required?: boolean;
  default?: unknown;
  /**
   * The variable is a GraphQL enum: the value is read in any case, dashes and spaces as
   * underscores (`?category=private-credit` is PRIVATE_CREDIT), as the documents spell them.
   */
  enum?: boolean;
  /** Inclusive bounds for numbers, checked here so the 400 names the HTTP parameter. */
  min?: number;
  max?: number;
}

export interface RestRoute {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** Fastify path, e.g. `/v1/protocols/:slug`. Also served under `/api` (`/api/v1/...`). */
  path: string;
  /** Operation name in schema/operations/rest/*.graphql. */
  operation: string;
  variables?: Record<string, ParamSpec>;
  /** Dot path into `data` whose value is the response body, e.g. `vessel` or `portCalls.nodes`. */
  result: string;
  /** Success status (201 for creation, 204 sends no body). */
  status?: 200 | 201 | 202 | 204;
  /** When the result is null: 404 naming this resource and the parameter that identified it. */
  notFound?: { resource: string; param: string };
  /** What aliases cannot express: numbers, lower-case values, snake_case inside JSON (rest-shape.ts). */
  shape?: RestShape;
}
