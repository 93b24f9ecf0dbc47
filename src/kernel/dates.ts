import { badInput } from './errors.js';

/*
 * Instants as every door hands them to the domain. JavaScript dates reach ±275760 years;
 * PostgreSQL refuses year 0 and ISO strings with an expanded year, and SQLite stores whatever it
 * gets. No port call, order, invoice or report of this service lies outside 1900–2199, so that is
 * the accepted range, checked before any query.
 */
export const EARLIEST = new Date('1900-01-01T00:00:00.000Z');
export const LATEST = new Date('2199-12-31T23:59:59.999Z');

/** The same range for calendar dates (`YYYY-MM-DD` strings compare in date order). */
export const EARLIEST_DAY = '1900-01-01';
export const LATEST_DAY = '2199-12-31';
export const RANGE_TEXT = `between ${EARLIEST_DAY} and ${LATEST_DAY}`;

/** True when a `YYYY-MM-DD` day lies in the accepted range. */
export function dayInRange(day: string): boolean {
  return day >= EARLIEST_DAY && day <= LATEST_DAY;
}

/** `date` if it lies in the accepted range, else a 400 naming `field`. */
export function checkDate(date: Date, field: string): Date {
  const time = date.getTime();
  if (Number.isNaN(time)) throw badInput(field, 'is not a valid date-time');
  if (time < EARLIEST.getTime() || time > LATEST.getTime())
    throw badInput(field, `must lie ${RANGE_TEXT} (got ${date.toISOString()})`, {
      rule: 'DATE_RANGE',
    });
  return date;
}

/** An ISO-8601 date-time (or a Date from the GraphQL scalar), checked; absent or '' is null. */
export function parseDate(raw: Date | string | null | undefined, field: string): Date | null {
  if (raw === null || raw === undefined || raw === '') return null;
  const date = raw instanceof Date ? raw : new Date(raw);
  if (Number.isNaN(date.getTime()))
    throw badInput(field, `is not an ISO-8601 date-time (got '${String(raw).slice(0, 60)}')`);
  return checkDate(date, field);
}
