import { AppError, badInput } from '../kernel/errors.js';

/** A protocol slug: lower-case letters and digits in hyphen-separated runs (`harbor-treasury`). */
export const SLUG = /^[a-z0-9]+(?:-[a-z0-9]+)*$/;

export function isSlug(value: string): boolean {
  return value.length <= 80 && SLUG.test(value);
}

/**
 * Names of input fields in errors. The same service serves GraphQL (camelCase) and the REST
 * shims (snake_case aliases of the same variables), and knows nothing of which door a call came
 * through, so a field whose two spellings differ is named both ways: each caller finds the name
 * it sent.
 */
export function snakeCase(name: string): string {
  return name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
}

function bothNames(graphqlName: string): string {
  const rest = snakeCase(graphqlName);
  return rest === graphqlName ? graphqlName : `${graphqlName} / ${rest}`;
}

/** A 400 naming the field both ways; `extensions.field` stays the GraphQL name. */
export function badField(graphqlName: string, message: string): AppError {
  return badInput(bothNames(graphqlName), message, { field: graphqlName, restField: snakeCase(graphqlName) });
}
