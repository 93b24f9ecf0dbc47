import { DateTimeType, Entity, Index, PrimaryKey, Property } from '@mikro-orm/core';

/** One row per API call (REST request, GraphQL operation, subscription start). Append-only. */
@Entity({ tableName: 'audit_records' })
@Index({ properties: ['accountId', 'at'] })
@Index({ properties: ['requestId', 'accountId', 'at', 'id'] })
export class AuditRecord {
  @PrimaryKey({ type: 'bigint', autoincrement: true })
  id!: string;

  @Property({ type: DateTimeType, index: true })
  at!: Date;

  @Property({ type: 'string', length: 64 })
  requestId!: string;

  @Property({ type: 'uuid', nullable: true })
  accountId?: string | null;

  @Property({ type: 'string', length: 16, nullable: true })
  credentialKind?: string | null;

  @Property({ type: 'string', length: 64, nullable: true })
  credentialId?: string | null;

  @Property({ type: 'string', length: 64, nullable: true })
  ip?: string | null;

  @Property({ type: 'string', length: 512, nullable: true })
  userAgent?: string | null;

  /** sha256(credential id + IP prefix + user agent), truncated: groups calls of one session. */
  @Property({ type: 'string', length: 32, nullable: true })
  fingerprint?: string | null;

  /** `GET /v1/vessels/lookup`, `query VesselLookup`, `subscription TierFeed` ... */
  @Property({ type: 'string', length: 200 })
  operation!: string;

  @Property({ type: 'integer' })
  status!: number;

  @Property({ type: 'integer' })
  durationMs!: number;

  /** graphql-http, graphql-ws, rest or console; null on rows written before it was recorded. */
  @Property({ type: 'string', length: 16, nullable: true })
  door?: string | null;

  /** The first error's code (`FORBIDDEN`, `NOT_FOUND` ...), null when the call had none. */
  @Property({ type: 'string', length: 40, nullable: true })
  errorCode?: string | null;
}

export const auditEntities = [AuditRecord];
