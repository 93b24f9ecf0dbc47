import { parse as parseCsv } from 'csv-parse/sync';
import { isDate } from '../kernel/clock.js';
import { RANGE_TEXT, dayInRange } from '../kernel/dates.js';
import { badInput } from '../kernel/errors.js';
import { textProblem } from '../kernel/text.js';

/**
 * Reading operator files (daily metrics, protocol profiles): CSV with a header row or a JSON
 * array of objects, each record with the place it came from, so every error names the CSV line
 * where the record starts or the JSON item's 1-based position.
 */

export type FileFormat = 'CSV' | 'JSON';

export interface Locator {
  /** `line 3` (CSV) or `item 2` (JSON). */
  label: string;
  details: { line: number } | { item: number };
}

export interface SourceRecord {
  at: Locator;
  record: Record<string, unknown>;
}

export function failAt(at: Locator, field: string, message: string): never {
  throw badInput(field, `${at.label}: ${message}`, at.details);
}

const line = (n: number): Locator => ({ label: `line ${n}`, details: { line: n } });

/** Plain decimal notation only (optional sign, fraction, exponent): no hex, octal, binary, Infinity or blanks. */
/** Longest text of a field that names no limit of its own (numbers and dates read as text too). */
const FIELD_MAX = 10_000;
const DECIMAL = /^[+-]?\d+(\.\d+)?([eE][+-]?\d+)?$/;

/** The 1-based line of the first non-blank character at or after a byte offset of the file. */
function lineAt(bytes: Buffer, offset: number): number {
  let i = offset;
  while (bytes[i] === 0x0d || bytes[i] === 0x0a) i++;
  return (
    (
      bytes
        .subarray(0, i)
        .toString('utf8')
        .match(/\r\n|\r|\n/g) ?? []
    ).length + 1
  );
}

const CSV_PROBLEMS: Record<string, string> = {
  CSV_QUOTE_NOT_CLOSED: 'a quoted value that starts in this record is never closed',
  INVALID_OPENING_QUOTE: 'a quote inside an unquoted value (quote the whole value and double inner quotes)',
  CSV_INVALID_CLOSING_QUOTE: 'a character follows a closing quote (double quotes inside a quoted value)',
  CSV_RECORD_INCONSISTENT_COLUMNS: 'has a different number of values than the header',
};

/** The header row alone, to name the column of a parse error further down (empty if it is broken too). */
function headerOf(text: string): string[] {
  try {
    const [header] = parseCsv(text, { to: 1, skip_empty_lines: true, trim: true, bom: true }) as string[][];
    return header ?? [];
  } catch {
    return [];
  }
}

function readCsv(text: string): SourceRecord[] {
  const bytes = Buffer.from(text, 'utf8');
  let parsed: Array<{ record: string[]; info: { bytes: number } }>;
  try {
    parsed = parseCsv(text, { skip_empty_lines: true, trim: true, info: true, bom: true }) as never;
  } catch (e) {
    const err = e as Error & { code?: string; column?: string | number | null; bytes_records?: number };
    const at = line(lineAt(bytes, err.bytes_records ?? 0));
    const field = typeof err.column === 'number' ? (headerOf(text)[err.column] ?? 'file') : 'file';
    failAt(at, field, `is not valid CSV: ${(err.code && CSV_PROBLEMS[err.code]) ?? err.message}`);
  }
  if (parsed.length === 0) return [];
  const header = parsed[0]!.record;
  const seen = new Set<string>();
  for (const name of header) {
    if (!name) failAt(line(lineAt(bytes, 0)), 'file', 'the header has an empty column name');
    if (seen.has(name)) failAt(line(lineAt(bytes, 0)), name, 'appears twice in the header');
    seen.add(name);
  }
  return parsed.slice(1).map((r, i) => ({
    // A record may span several lines (quoted line breaks): name the line where it starts.
    at: line(lineAt(bytes, parsed[i]!.info.bytes)),
    record: Object.fromEntries(header.map((name, c) => [name, r.record[c]])),
  }));
}

function readJson(text: string): SourceRecord[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (e) {
    throw badInput('file', `is not valid JSON: ${(e as Error).message}`);
  }
  if (!Array.isArray(parsed)) throw badInput('file', 'JSON must be an array of row objects');
  return parsed.map((record, i) => {
    const at: Locator = { label: `item ${i + 1}`, details: { item: i + 1 } };
    if (typeof record !== 'object' || record === null || Array.isArray(record))
      failAt(at, 'row', 'must be an object');
    return { at, record: record as Record<string, unknown> };
  });
}

export function readRecords(text: string, format: FileFormat): SourceRecord[] {
  return format === 'CSV' ? readCsv(text) : readJson(text);
}

/**
 * Field readers for one record (a file row, or a GraphQL input object); every failure names the
 * field as the caller spelled it (`nameOf`) and, for file rows, the record's place.
 */
export class FieldReader {
  constructor(
    private readonly at: Locator | null,
    private readonly record: Record<string, unknown>,
    private readonly nameOf: (field: string) => string = (field) => field,
  ) {}

  fail(field: string, message: string): never {
    const name = this.nameOf(field);
    if (this.at) failAt(this.at, name, message);
    throw badInput(name, message);
  }

  /** Rejects fields outside the allowed set. */
  only(allowed: readonly string[]): void {
    for (const key of Object.keys(this.record))
      if (!allowed.includes(key))
        this.fail(key, `unknown field (expected ${allowed.map(this.nameOf).join(', ')})`);
  }

  /** True when the record sets the field to null explicitly (JSON / GraphQL): a request to clear it. */
  cleared(field: string): boolean {
    return field in this.record && this.record[field] === null;
  }

  has(field: string): boolean {
    const v = this.record[field];
    return v !== undefined && v !== null && v !== '';
  }

  /** Trimmed text; null when absent or empty. */
  text(field: string, opts: { required?: boolean; max?: number; multiline?: boolean } = {}): string | null {
    const v = this.record[field];
    if (v === undefined || v === null || v === '' || (typeof v === 'string' && v.trim() === '')) {
      if (opts.required) this.fail(field, 'is required');
      return null;
    }
    if (typeof v !== 'string' && typeof v !== 'number') this.fail(field, 'must be a string or number');
    const value = String(v).trim();
    const problem = textProblem(value, { max: opts.max ?? FIELD_MAX, multiline: opts.multiline });
    if (problem) this.fail(field, problem.message);
    return value;
  }

  number(
    field: string,
    opts: { required?: boolean; min?: number; max?: number; integer?: boolean } = {},
  ): number | null {
    const raw = this.text(field, opts);
    if (raw === null) return null;
    const value = Number(raw);
    if (!DECIMAL.test(raw) || !Number.isFinite(value))
      this.fail(field, `must be a decimal number (got '${raw}')`);
    if (opts.integer && !Number.isInteger(value)) this.fail(field, `must be a whole number (got '${raw}')`);
    if ((opts.min !== undefined && value < opts.min) || (opts.max !== undefined && value > opts.max)) {
      this.fail(field, `must be between ${opts.min ?? '-∞'} and ${opts.max ?? '∞'} (got ${value})`);
    }
    return value;
  }

  date(
    field: string,
    opts: { required?: boolean; notAfter?: { date: string; why: string } } = {},
  ): string | null {
    const raw = this.text(field, opts);
    if (raw === null) return null;
    if (!isDate(raw)) this.fail(field, `must be a date YYYY-MM-DD (got '${raw}')`);
    if (!dayInRange(raw)) this.fail(field, `must lie ${RANGE_TEXT} (got ${raw})`);
    if (opts.notAfter && raw > opts.notAfter.date)
      this.fail(field, `must not be after ${opts.notAfter.why} (got ${raw})`);
    return raw;
  }

  boolean(field: string, opts: { required?: boolean } = {}): boolean | null {
    const v = this.record[field];
    if (typeof v === 'boolean') return v;
    const raw = this.text(field, opts);
    if (raw === null) return null;
    if (/^(true|yes|1)$/i.test(raw)) return true;
    if (/^(false|no|0)$/i.test(raw)) return false;
    this.fail(field, `must be true or false (got '${raw}')`);
  }

  /** One of the enum's values, any case; dashes and spaces read as underscores. */
  choice<T extends string>(field: string, values: readonly T[], opts: { required?: boolean } = {}): T | null {
    const raw = this.text(field, opts);
    if (raw === null) return null;
    const value = raw.toUpperCase().replace(/[-\s]/g, '_');
    if (!(values as readonly string[]).includes(value))
      this.fail(field, `must be one of ${values.join(', ')} (got '${raw}')`);
    return value as T;
  }

  /** Raw value for structured fields (arrays, objects); in CSV they are JSON text. */
  structured(field: string): unknown {
    const v = this.record[field];
    if (v === undefined || v === null || v === '') return undefined;
    if (typeof v !== 'string') return v;
    const text = v.trim();
    if (!text.startsWith('[') && !text.startsWith('{')) return text;
    try {
      return JSON.parse(text);
    } catch (e) {
      this.fail(field, `is not valid JSON: ${(e as Error).message}`);
    }
  }
}
