import { expect } from 'vitest';
import type { Database } from '../../src/db/orm.js';

/*
 * Query plans for the plan checks (test/port-ops/query-plan.e2e.test.ts,
 * test/audit/query-plan.e2e.test.ts): every statement a read runs must reach its rows through an
 * index, never by reading a whole table. SQLite: EXPLAIN QUERY PLAN, where a full scan is
 * `SCAN <table>` without `USING … INDEX`. PostgreSQL: EXPLAIN with sequential scans priced out
 * (enable_seqscan off), which is what the planner does on its own once a table holds enough rows;
 * a `Seq Scan` left in the plan then means there is no index it could use.
 */

/** A statement as the ORM's query log shows it, or undefined for a line that is not a read. */
function loggedRead(line: string): string | undefined {
  return /^\[query\] ((?:select|with)\b.*?)(?: \[took .*)?$/is.exec(line)?.[1];
}

/**
 * The reads of the tables `tables` matches that a test server runs while `record` runs: give
 * `onQuery` to `startTestServer`.
 */
export function readRecorder(tables: RegExp): {
  onQuery: (line: string) => void;
  record: (run: () => Promise<unknown>) => Promise<string[]>;
} {
  let recording = false;
  let statements: string[] = [];
  return {
    onQuery: (line) => {
      const sql = loggedRead(line);
      if (recording && sql && tables.test(sql)) statements.push(sql);
    },
    async record(run) {
      statements = [];
      recording = true;
      try {
        await run();
      } finally {
        recording = false;
      }
      return statements;
    },
  };
}

/**
 * The plan whatever the parameter values: SQLite plans without them (every `?` is bound to 1);
 * PostgreSQL is asked for the generic plan of the prepared statement.
 */
export async function planOf(db: Database, sql: string): Promise<string> {
  const knex = db.em().getKnex();
  const params = (sql.match(/\?/g) ?? []).length;
  if (db.dialect === 'sqlite') {
    const rows = (await knex.raw(`explain query plan ${sql}`, Array(params).fill(1))) as Array<{
      detail: string;
    }>;
    return rows.map((r) => r.detail).join('\n');
  }
  // The log shows PostgreSQL's own placeholders ($1 …); knex's `?` would be numbered here.
  let n = 0;
  const numbered = sql.replace(/\?/g, () => `$${++n}`);
  n = Math.max(n, ...[...numbered.matchAll(/\$(\d+)/g)].map((m) => Number(m[1])));
  return knex.transaction(async (trx) => {
    await trx.raw('set local enable_seqscan = off');
    await trx.raw('set local plan_cache_mode = force_generic_plan');
    await trx.raw(`prepare plan_check as ${numbered}`);
    try {
      const args = n > 0 ? `(${Array(n).fill('null').join(', ')})` : '';
      const result = (await trx.raw(`explain execute plan_check${args}`)) as {
        rows: Array<{ 'QUERY PLAN': string }>;
      };
      return result.rows.map((r) => r['QUERY PLAN']).join('\n');
    } finally {
      // A prepared statement belongs to the session, not the transaction.
      await trx.raw('deallocate plan_check');
    }
  });
}

/**
 * The plan's full scans and, with `sorts`, its sorts (SQLite: `USE TEMP B-TREE`, also "FOR LAST
 * TERM" or "FOR RIGHT PART OF ORDER BY"). PostgreSQL's planner prices a sort of a few rows below an
 * ordered index walk on tables this small, so there only scans count.
 */
export function planProblems(dialect: Database['dialect'], plan: string, sorts = true): string[] {
  return plan
    .split('\n')
    .filter((line) =>
      dialect === 'sqlite'
        ? /^SCAN \w+$/.test(line.trim()) || (sorts && /USE TEMP B-TREE/.test(line))
        : /Seq Scan/.test(line),
    );
}

/**
 * Fails unless there is a statement and every one reaches its rows through an index (and, with
 * `sorts`, in its order); the plans, for what a caller checks beyond that.
 */
export async function expectIndexed(db: Database, statements: string[], sorts = true): Promise<string[]> {
  expect(statements.length).toBeGreaterThan(0);
  const plans: string[] = [];
  for (const sql of statements) {
    const plan = await planOf(db, sql);
    expect(planProblems(db.dialect, plan, sorts), `${sql}\n${plan}`).toEqual([]);
    plans.push(plan);
  }
  return plans;
}
