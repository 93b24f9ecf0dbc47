import { badInput } from './errors.js';

/*
 * Text as every door hands it to the domain. A database column should never hold a NUL (PostgreSQL
 * refuses it outright), another C0 control character or an unpaired UTF-16 surrogate (not Unicode:
 * PostgreSQL refuses it, JSON and CSV consumers choke on it), and no field is unbounded.
 */

/** C0 controls and DEL. */
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const CONTROL = /[\u0000-\u001f\u007f]/;
/** The same, but free text (descriptions, notes) may keep tab, line feed and carriage return. */
// eslint-disable-next-line no-control-regex -- as above
const CONTROL_IN_FREE_TEXT = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/;
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

export interface TextRule {
  /** Longest accepted value, in UTF-16 code units (what `String.length` counts). */
  max?: number;
  /** Free text: tab and line breaks allowed. */
  multiline?: boolean;
}

export interface TextProblem {
  message: string;
  rule: 'TOO_LONG' | 'CONTROL_CHARACTER' | 'INVALID_UNICODE';
}

/** What is wrong with `value` under `rule`, or null; for callers that report errors their own way. */
export function textProblem(value: string, rule: TextRule = {}): TextProblem | null {
  if (rule.max !== undefined && value.length > rule.max)
    return { message: `must be at most ${rule.max} characters (got ${value.length})`, rule: 'TOO_LONG' };
  const control = (rule.multiline ? CONTROL_IN_FREE_TEXT : CONTROL).exec(value);
  if (control) {
    const code = control[0].charCodeAt(0).toString(16).toUpperCase().padStart(4, '0');
    return { message: `must not contain the control character U+${code}`, rule: 'CONTROL_CHARACTER' };
  }
  if (LONE_SURROGATE.test(value))
    return {
      message: 'is not valid Unicode (it holds an unpaired UTF-16 surrogate)',
      rule: 'INVALID_UNICODE',
    };
  return null;
}

/** Returns `value` unchanged, or throws a 400 naming `field` and the rule it broke. */
export function checkText(value: string, field: string, rule: TextRule = {}): string {
  const problem = textProblem(value, rule);
  if (problem) throw badInput(field, problem.message, { rule: problem.rule });
  return value;
}

/** A required single-line (or, with `multiline`, free) text: trimmed, not empty, checked. */
export function requireText(
  raw: string | null | undefined,
  field: string,
  max: number,
  rule: Omit<TextRule, 'max'> = {},
): string {
  const value = (raw ?? '').trim();
  if (!value) throw badInput(field, 'must not be empty');
  return checkText(value, field, { ...rule, max });
}

/** Like `requireText`, but absent or blank is null. */
export function optionalText(
  raw: string | null | undefined,
  field: string,
  max: number,
  rule: Omit<TextRule, 'max'> = {},
): string | null {
  if (raw === null || raw === undefined || raw.trim() === '') return null;
  return requireText(raw, field, max, rule);
}

/** Longest string anywhere inside a free-form JSON value (details, weights …). */
const JSON_STRING_MAX = 10_000;
/** Deepest nesting accepted inside a free-form JSON value. */
export const JSON_VALUE_MAX_DEPTH = 8;

/**
 * Every key and string inside a free-form JSON value passes `checkText`, and it nests at most
 * `JSON_VALUE_MAX_DEPTH` deep; the error names the path (`details.fuelType`, `details.notes[2]`).
 */
export function checkJsonText(value: unknown, field: string, depth = 0): void {
  if (typeof value === 'string') {
    checkText(value, field, { max: JSON_STRING_MAX, multiline: true });
    return;
  }
  if (value === null || typeof value !== 'object') return;
  if (depth >= JSON_VALUE_MAX_DEPTH)
    throw badInput(field, `nests deeper than ${JSON_VALUE_MAX_DEPTH} levels`, { rule: 'TOO_DEEP' });
  if (Array.isArray(value)) {
    value.forEach((item, i) => checkJsonText(item, `${field}[${i}]`, depth + 1));
    return;
  }
  for (const [key, item] of Object.entries(value)) {
    checkText(key, `${field} (a key)`, { max: 100 });
    checkJsonText(item, `${field}.${key}`, depth + 1);
  }
}

/**
 * A value of a closed list (an enum), or a 400 listing the allowed values.
 */
export function parseEnum<T extends Record<string, string>>(
  values: T,
  raw: unknown,
  field: string,
): T[keyof T] {
  if (typeof raw === 'string' && Object.values(values).includes(raw)) return raw as T[keyof T];
  throw badInput(field, `must be one of ${Object.values(values).join(', ')} (got ${describeValue(raw)})`);
}

/**
 * A caller's value as a message quotes it: scalars as JSON cut short (echoing a megabyte back
 * helps no one), arrays and objects by kind (a nested array where a number belongs).
 */
export function describeValue(raw: unknown, max = 60): string {
  if (Array.isArray(raw)) return 'an array';
  if (raw !== null && typeof raw === 'object') return 'an object';
  const text = JSON.stringify(raw) ?? String(raw);
  return text.length > max ? `${text.slice(0, max)}…` : text;
}
