import { GraphQLScalarType } from 'graphql';
import { DateTimeISOResolver } from 'graphql-scalars';

/*
 * The schema's `DateTimeISO`: graphql-scalars' scalar, whose serialized form is
 * `Date.prototype.toISOString()`, with that text written here for a valid Date from year 1000 to
 * 9999. V8's toISOString costs about 0.6 µs a date (a call into the runtime), three times this
 * arithmetic; a 50-call dashboard serializes 150 dates. Anything else (another year, an
 * invalid Date, a string or a number) is serialized by graphql-scalars itself, so the text and the
 * errors are the same. Parsing, the name, the description and the SDL are graphql-scalars'.
 *
 * The texts are kept by time (`written`, at most WRITTEN_MAX): the same rows are answered again and
 * again (a read model's, or read again by statement), so most dates were written before. A kept text
 * costs one map lookup (8–16 ns a date against ~120 for the arithmetic, measured on 400 dates), and it
 * was flattened by the first JSON.stringify that wrote it, where a freshly concatenated one is
 * flattened again on every answer. The cold GraphQL dashboard (150 dates) measured 10–13 % less wall
 * time a request with it (test/bench/cpu.ts, alternated with the build before it); under the mixed
 * bench 92 % of the dates written were kept texts (49,339 of 53,345, the map never full).
 *
 * A plain map emptied when full, not kernel/lru.ts: an answer reads its dates in the same order every
 * time, and on such passes the Lru moves half its keys to keep recency, 250–320 ns a lookup measured
 * on 400 dates, more than the arithmetic it would save. Past WRITTEN_MAX distinct times the map
 * starts afresh, so a working set larger than it costs a lookup and an insert beside the arithmetic.
 */

const DAY = 86_400_000;
/** 1000-01-01T00:00:00.000Z and 10000-01-01T00:00:00.000Z: four-digit years, as toISOString writes them. */
const FIRST = Date.UTC(1000, 0, 1);
const END = Date.UTC(10_000, 0, 1);
const TWO_DIGITS = Array.from({ length: 100 }, (_, i) => (i < 10 ? `0${i}` : `${i}`));
/** Texts kept; past this many the map starts afresh (1.2 MiB of heap when full, measured). */
export const WRITTEN_MAX = 10_000;
const written = new Map<number, string>();

/**
 * `new Date(time).toISOString()` for a time from 1000-01-01 to 9999-12-31 (UTC): the civil date
 * from the days since 1970-01-01 (H. Hinnant's `civil_from_days`), then the time of day.
 */
export function isoDateTime(time: number): string {
  const days = Math.floor(time / DAY);
  let ms = time - days * DAY;
  const z = days + 719_468;
  const era = Math.floor(z / 146_097);
  const dayOfEra = z - era * 146_097;
  const yearOfEra = Math.floor(
    (dayOfEra -
      Math.floor(dayOfEra / 1460) +
      Math.floor(dayOfEra / 36_524) -
      Math.floor(dayOfEra / 146_096)) /
      365,
  );
  const dayOfYear = dayOfEra - (365 * yearOfEra + Math.floor(yearOfEra / 4) - Math.floor(yearOfEra / 100));
  const shiftedMonth = Math.floor((5 * dayOfYear + 2) / 153);
  const day = dayOfYear - Math.floor((153 * shiftedMonth + 2) / 5) + 1;
  const month = shiftedMonth < 10 ? shiftedMonth + 3 : shiftedMonth - 9;
  const year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0);
  const hours = Math.floor(ms / 3_600_000);
  ms -= hours * 3_600_000;
  const minutes = Math.floor(ms / 60_000);
  ms -= minutes * 60_000;
  const seconds = Math.floor(ms / 1000);
  ms -= seconds * 1000;
  return `${year}-${TWO_DIGITS[month]}-${TWO_DIGITS[day]}T${TWO_DIGITS[hours]}:${TWO_DIGITS[minutes]}:${TWO_DIGITS[seconds]}.${ms < 10 ? '00' : ms < 100 ? '0' : ''}${ms}Z`;
}

export const DateTimeISO = new GraphQLScalarType({
  ...DateTimeISOResolver.toConfig(),
  serialize(value) {
    if (value instanceof Date) {
      const time = value.getTime();
      const kept = written.get(time);
      if (kept !== undefined) return kept;
      if (time >= FIRST && time < END) {
        const text = isoDateTime(time);
        if (written.size >= WRITTEN_MAX) written.clear();
        written.set(time, text);
        return text;
      }
    }
    return DateTimeISOResolver.serialize(value);
  },
});
