// The JSON body parser every route shares: empty body → no body, nesting and prototype keys refused.
import secureJson from 'secure-json-parse';
import type { FastifyInstance } from 'fastify';
import { AppError, badInput } from '../../../kernel/errors.js';

/** Deepest nesting of arrays and objects a JSON body may have; the deepest real request is about 8. */
export const JSON_BODY_MAX_DEPTH = 32;

/**
 * JSON bodies as Fastify parses them (invalid → 400, `__proto__`/`constructor` keys refused)
 * without secure-json-parse's two regular-expression scans of every body: a body can only hold
 * such a key if it contains one of those words literally or a \u escape, and almost none do.
 * An empty body is no body: the port-operations document has clients send
 * `Content-Type: application/json` on every request, bodiless DELETEs and transitions included;
 * a route that needs a body says so naming `body`. Nesting deeper than `JSON_BODY_MAX_DEPTH` is
 * refused before parsing, so no later walk over the value can exhaust the stack.
 */
export function registerJsonBodyParser(app: FastifyInstance): void {
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, body, done) => {
    const text = body as string;
    if (text.trim().length === 0) return done(null, undefined);
    if (nestingExceeds(text, JSON_BODY_MAX_DEPTH)) {
      return done(
        badInput('body', `nests arrays or objects deeper than ${JSON_BODY_MAX_DEPTH} levels`, {
          rule: 'JSON_TOO_DEEP',
        }),
      );
    }
    const suspicious = text.includes('__proto__') || text.includes('constructor') || text.includes('\\u');
    try {
      done(
        null,
        suspicious
          ? secureJson.parse(text, { protoAction: 'error', constructorAction: 'error' })
          : JSON.parse(text),
      );
    } catch (e) {
      const message = (e as Error).message;
      done(
        /forbidden (prototype|constructor) property/.test(message)
          ? badInput('body', 'must not hold a "__proto__" or "constructor.prototype" key', {
              rule: 'PROTOTYPE_KEY',
            })
          : new AppError('BAD_USER_INPUT', `The body is not valid JSON: ${message}`),
      );
    }
  });
}

/** True when `[`/`{` nest deeper than `max` outside strings; one pass, no parse. */
export function nestingExceeds(text: string, max: number): boolean {
  // Nesting deeper than `max` takes more than 2 × max characters: short bodies skip the scan.
  if (text.length <= max * 2) return false;
  // Depth never exceeds the number of opening brackets: a body with no more than `max` of them
  // (nearly every request) is answered by a few native searches instead of a loop over each character.
  if (openingBrackets(text, max + 1) <= max) return false;
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c)
        i++; // backslash: skip the escaped character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) {
      if (++depth > max) return true;
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
  return false;
}

/** How many `{` and `[` `text` holds (inside strings too), counting no further than `stopAt`. */
function openingBrackets(text: string, stopAt: number): number {
  let count = 0;
  for (const bracket of ['{', '[']) {
    for (let i = text.indexOf(bracket); i !== -1 && count < stopAt; i = text.indexOf(bracket, i + 1)) count++;
  }
  return count;
}
