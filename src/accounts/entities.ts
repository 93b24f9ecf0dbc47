import { randomUUID } from 'node:crypto';
import { DateTimeType, Entity, Enum, Index, ManyToOne, PrimaryKey, Property } from '@mikro-orm/core';
import { Plan } from '../kernel/plans.js';

@Entity({ tableName: 'accounts' })
export class Account {
  @PrimaryKey({ type: 'uuid' })
  id: string = randomUUID();

  @Property({ type: 'string', length: 200 })
  name!: string;

  @Enum({ items: () => Plan, nativeEnumName: undefined })
  plan!: Plan;

  @Property({ type: DateTimeType })
  createdAt!: Date;

  /**
   * Set on a sandbox account: the real account it belongs to. A sandbox account holds demo data
   * only, has no users, and its keys act with the real account's plan (see src/playground/sandbox.ts).
   */
  @Property({ type: 'uuid', nullable: true, unique: true })
  sandboxOf?: string | null;
}

@Entity({ tableName: 'users' })
export class User {
  @PrimaryKey({ type: 'uuid' })
  id: string = randomUUID();

  @ManyToOne(() => Account, { deleteRule: 'cascade' })
  account!: Account;

  /** Stored lower-cased; unique across the service. */
  @Property({ type: 'string', length: 320, unique: true })
  email!: string;

  @Property({ type: 'string', length: 200 })
  name!: string;

  @Property({ type: 'string', length: 200, hidden: true })
  passwordHash!: string;

  @Property({ type: 'json' })
  roles: string[] = [];

  @Property({ type: DateTimeType })
  createdAt!: Date;
}

@Entity({ tableName: 'api_keys' })
@Index({ properties: ['account', 'revokedAt'] })
export class ApiKey {
  @PrimaryKey({ type: 'uuid' })
  id: string = randomUUID();

  @ManyToOne(() => Account, { deleteRule: 'cascade' })
  account!: Account;

  @Property({ type: 'string', length: 200 })
  name!: string;

  /** The first characters of the secret, shown in listings so people can tell keys apart. */
  @Property({ type: 'string', length: 16 })
  prefix!: string;

  /** SHA-256 of the whole secret; the secret itself is never stored. */
  @Property({ type: 'string', length: 64, unique: true, hidden: true })
  secretHash!: string;

  @Property({ type: 'json' })
  scopes: string[] = [];

  @Property({ type: DateTimeType })
  createdAt!: Date;

  @Property({ type: DateTimeType, nullable: true })
  lastUsedAt?: Date | null;

  @Property({ type: DateTimeType, nullable: true })
  revokedAt?: Date | null;

  @Property({ type: DateTimeType, nullable: true })
  expiresAt?: Date | null;

  /** The key this one replaced by rotation; a key has at most one successor. */
  @Property({ type: 'uuid', nullable: true, unique: true })
  rotatedFromId?: string | null;
}

export const accountEntities = [Account, User, ApiKey];
