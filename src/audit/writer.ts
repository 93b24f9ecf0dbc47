import { isIPv4, isIPv6 } from 'node:net';
import type { Database } from '../db/orm.js';
import { sha256Hex } from '../kernel/crypto.js';
import { AuditRecord } from './entities.js';

export interface AuditEntry {
  at: Date;
  requestId: string;
  accountId?: string | null;
  credentialKind?: string | null;
  credentialId?: string | null;
  ip?: string | null;
  userAgent?: string | null;
  operation: string;
  status: number;
  durationMs: number;
}

/** /24 for IPv4, /48 for IPv6: a session that hops addresses inside one network keeps its fingerprint. */
export function ipPrefix(ip: string): string {
  const v4 = ip.startsWith('::ffff:') ? ip.slice(7) : ip;
  if (isIPv4(v4)) return v4.split('.').slice(0, 3).join('.') + '.0/24';
  if (isIPv6(ip)) {
    const groups = expandIpv6(ip);
    return groups.slice(0, 3).join(':') + '::/48';
  }
  return ip;
}

function expandIpv6(ip: string): string[] {
  const [head, tail] = ip.split('::') as [string, string | undefined];
  const left = head ? head.split(':') : [];
  const right = tail ? tail.split(':') : [];
  const fill = Array(8 - left.length - right.length).fill('0');
  return [...left, ...(tail === undefined ? [] : fill), ...right].map((g) => g.toLowerCase());
}

export function sessionFingerprint(
  credentialId: string | null | undefined,
  ip: string | null | undefined,
  userAgent: string | null | undefined,
): string | null {
  if (!credentialId) return null;
  const input = `${credentialId}|${ip ? ipPrefix(ip) : ''}|${userAgent ?? ''}`;
  let fingerprint = recentFingerprints.get(input);
  if (fingerprint === undefined) {
    fingerprint = sha256Hex(input).slice(0, 32);
    if (recentFingerprints.size >= 1_000) recentFingerprints.clear();
    recentFingerprints.set(input, fingerprint);
  }
  return fingerprint;
}

/** A session makes many calls in a row: remember its fingerprint instead of hashing each time. */
const recentFingerprints = new Map<string, string>();

const COLUMNS = [
  'at',
  'request_id',
  'account_id',
  'credential_kind',
  'credential_id',
  'ip',
  'user_agent',
  'fingerprint',
  'operation',
  'status',
  'duration_ms',
] as const;
const ROW_PLACEHOLDERS = `(${COLUMNS.map(() => '?').join(', ')})`;

/**
 * One parameterised multi-row INSERT. The audit log is written on every call, so this skips the
 * ORM's query builder (which inlines and quotes every value) and hands the driver bound
 * parameters; dates are converted the way the ORM stores them on this dialect.
 */
async function insertAuditRows(db: Database, batch: AuditEntry[]): Promise<void> {
  const em = db.em();
  const platform = em.getPlatform();
  const params: Array<string | number | Date | null> = [];
  for (const e of batch) {
    params.push(
      platform.processDateProperty(e.at),
      e.requestId,
      e.accountId ?? null,
      e.credentialKind ?? null,
      e.credentialId ?? null,
      e.ip ?? null,
      e.userAgent?.slice(0, 512) ?? null,
      sessionFingerprint(e.credentialId, e.ip, e.userAgent),
      e.operation.slice(0, 200),
      e.status,
      Math.round(e.durationMs),
    );
  }
  const table = em.getMetadata().get(AuditRecord.name).tableName;
  const sql = `insert into ${platform.quoteIdentifier(table)} (${COLUMNS.map((c) => platform.quoteIdentifier(c)).join(', ')}) values ${Array(batch.length).fill(ROW_PLACEHOLDERS).join(', ')}`;
  // knex hands the parameters to the driver as bindings (the ORM's execute() would inline them).
  await em.getConnection().getKnex().raw(sql, params);
}

/**
 * Appends audit records in small batches off the request path. A crash can lose at most the
 * last flush interval; shutdown flushes what is buffered.
 */
export class AuditWriter {
  private buffer: AuditEntry[] = [];
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> = Promise.resolve();

  constructor(
    private readonly db: Database,
    private readonly onError: (error: unknown) => void,
    private readonly flushMs = 250,
    private readonly maxBatch = 500,
  ) {}

  record(entry: AuditEntry): void {
    this.buffer.push(entry);
    if (this.buffer.length >= this.maxBatch) {
      void this.flush();
    } else if (!this.timer) {
      this.timer = setTimeout(() => void this.flush(), this.flushMs);
      this.timer.unref();
    }
  }

  /** Writes everything buffered so far; resolves when it is stored. */
  flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    const batch = this.buffer;
    this.buffer = [];
    this.flushing = this.flushing.then(async () => {
      if (batch.length === 0) return;
      try {
        await insertAuditRows(this.db, batch);
      } catch (error) {
        this.onError(error);
      }
    });
    return this.flushing;
  }
}
