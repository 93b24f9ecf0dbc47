/** Time is injected so tests can move it (code and token expiry, rate windows, history). */
export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };

/** A clock that only moves when told to. */
export class ManualClock implements Clock {
  private current: number;

  constructor(start: Date | string = '2026-01-01T00:00:00.000Z') {
    this.current = new Date(start).getTime();
  }

  now(): Date {
    return new Date(this.current);
  }

  advance(ms: number): void {
    this.current += ms;
  }

  set(to: Date | string): void {
    this.current = new Date(to).getTime();
  }
}

export const SECOND = 1000;
export const MINUTE = 60 * SECOND;
export const HOUR = 60 * MINUTE;
export const DAY = 24 * HOUR;

/** A calendar date `YYYY-MM-DD` that exists: not 2030-02-30, not month 13. */
export function isDate(value: string): boolean {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(value)) return false;
  const date = new Date(`${value}T00:00:00Z`);
  return !Number.isNaN(date.getTime()) && date.toISOString().slice(0, 10) === value;
}

/** The clock's current UTC calendar date, `YYYY-MM-DD`. */
export function todayOf(clock: Clock): string {
  return clock.now().toISOString().slice(0, 10);
}

/** Parses durations such as `30d`, `12h`, `15m`, `90s`. */
export function parseDuration(text: string): number {
  const match = /^(\d+)\s*(s|m|h|d)$/.exec(text.trim());
  if (!match) throw new Error(`'${text}' is not a duration (use e.g. 30d, 12h, 15m or 90s)`);
  const unit = { s: SECOND, m: MINUTE, h: HOUR, d: DAY }[match[2] as 's' | 'm' | 'h' | 'd'];
  const value = Number(match[1]) * unit;
  if (value <= 0) throw new Error(`'${text}' must be longer than zero`);
  return value;
}
