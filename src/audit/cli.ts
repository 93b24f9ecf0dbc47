import type { CliCommand } from '../db/cli-command.js';
import { badInput } from '../kernel/errors.js';

function parseDate(field: string, value: unknown): Date | null {
  if (typeof value !== 'string') return null;
  const date = new Date(value);
  if (Number.isNaN(date.getTime())) throw badInput(field, `'${value}' is not an ISO-8601 date-time`);
  return date;
}

const PAGE = 1000;

export const auditCommands: CliCommand[] = [
  {
    name: 'audit export',
    description: 'Write the audit log as JSON lines (oldest first) to stdout',
    usage: '[--since ISO] [--until ISO] [--account ID]',
    streamsOutput: true,
    options: {
      since: { description: 'Only entries at or after this ISO-8601 time', type: 'string' },
      until: { description: 'Only entries before this ISO-8601 time', type: 'string' },
      account: { description: 'Only entries of this account id', type: 'string' },
    },
    async run({ db, progress }, { options }) {
      // Loaded when the command runs, not when the command table is (src/cli.ts).
      const [{ AuditRecord }, { auditFilter }] = await Promise.all([
        import('./entities.js'),
        import('./resolvers.js'),
      ]);
      const filter = auditFilter({
        accountId: typeof options.account === 'string' ? options.account : null,
        since: parseDate('since', options.since),
        until: parseDate('until', options.until),
      });
      // Keyset pagination on the id keeps memory flat however large the log is.
      let lastId = '0';
      let count = 0;
      for (;;) {
        const rows = await db
          .em()
          .find(
            AuditRecord,
            { $and: [filter, { id: { $gt: lastId } }] },
            { orderBy: { id: 'asc' }, limit: PAGE },
          );
        for (const r of rows) {
          process.stdout.write(
            JSON.stringify({
              id: String(r.id),
              at: r.at.toISOString(),
              request_id: r.requestId,
              account_id: r.accountId ?? null,
              credential_kind: r.credentialKind ?? null,
              credential_id: r.credentialId ?? null,
              ip: r.ip ?? null,
              user_agent: r.userAgent ?? null,
              fingerprint: r.fingerprint ?? null,
              operation: r.operation,
              status: r.status,
              duration_ms: r.durationMs,
              door: r.door ?? null,
              error_code: r.errorCode ?? null,
            }) + '\n',
          );
        }
        count += rows.length;
        // The records go to stdout; on a terminal the running count goes to stderr beside them.
        progress?.(`exported ${count} audit records`);
        if (rows.length < PAGE) break;
        lastId = String(rows[rows.length - 1]!.id);
      }
      return { json: { exported: count }, text: `Exported ${count} audit records` };
    },
  },
];
