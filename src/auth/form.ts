import type { FastifyRequest } from 'fastify';
import { invalidRequest } from './oauth-error.js';

export type Form = Record<string, string | undefined>;

/** The request's parameters (query or form body); a parameter sent twice is invalid_request (RFC 6749 §3.1). */
export function singleValued(source: unknown): Form {
  const form: Form = {};
  if (!source || typeof source !== 'object') return form;
  for (const [name, value] of Object.entries(source as Record<string, unknown>)) {
    if (Array.isArray(value)) throw invalidRequest(`parameter ${name} was sent more than once`);
    if (typeof value === 'string') form[name] = value;
  }
  return form;
}

/** Token, revocation and introspection requests are application/x-www-form-urlencoded (RFC 6749 §3.2). */
export function formBody(request: FastifyRequest): Form {
  const type = request.headers['content-type'] ?? '';
  if (!/^application\/x-www-form-urlencoded\b/i.test(type)) {
    throw invalidRequest('the request body must be application/x-www-form-urlencoded');
  }
  return singleValued(request.body);
}

export function requireParam(form: Form, name: string): string {
  const value = form[name];
  if (value === undefined || value === '') throw invalidRequest(`parameter ${name} is required`);
  return value;
}
