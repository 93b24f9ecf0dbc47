import { randomUUID } from 'node:crypto';
import { DateTimeType, Entity, Index, PrimaryKey, Property } from '@mikro-orm/core';

/** A registered OAuth application. Deleting it revokes everything issued to it. */
@Entity({ tableName: 'oauth_clients' })
export class OAuthClient {
  @PrimaryKey({ type: 'uuid' })
  id: string = randomUUID();

  /** The public identifier (`tgc_…`) clients send as client_id. */
  @Property({ type: 'string', length: 64, unique: true })
  clientId!: string;

  @Property({ type: 'uuid', index: true })
  accountId!: string;

  /** The console user who registered it; null when an operator used the CLI. */
  @Property({ type: 'uuid', nullable: true })
  createdByUserId?: string | null;

  @Property({ type: 'string', length: 200 })
  name!: string;

  @Property({ type: 'json' })
  redirectUris: string[] = [];

  /** Canonical scope names the client may ask for. */
  @Property({ type: 'json' })
  scopes: string[] = [];

  @Property({ type: 'json' })
  grantTypes: string[] = [];

  /** Confidential clients hold a secret; public clients (SPAs, mobile) rely on PKCE alone. */
  @Property({ type: 'boolean' })
  confidential!: boolean;

  /** SHA-256 of the client secret; null for public clients. */
  @Property({ type: 'string', length: 64, nullable: true, hidden: true })
  secretHash?: string | null;

  @Property({ type: DateTimeType })
  createdAt!: Date;
}

/** An authorization code: stored hashed, single-use, 10 minutes. */
@Entity({ tableName: 'oauth_codes' })
export class AuthorizationCode {
  @PrimaryKey({ type: 'uuid' })
  id: string = randomUUID();

  @Property({ type: 'string', length: 64, unique: true, hidden: true })
  codeHash!: string;

  @Property({ type: 'string', length: 64, index: true })
  clientId!: string;

  @Property({ type: 'uuid' })
  userId!: string;

  @Property({ type: 'uuid' })
  accountId!: string;

  @Property({ type: 'string', length: 2000 })
  redirectUri!: string;

  @Property({ type: 'json' })
  scopes: string[] = [];

  @Property({ type: 'string', length: 128 })
  codeChallenge!: string;

  /** OpenID Connect: the client's nonce, echoed in the ID token. */
  @Property({ type: 'string', length: 255, nullable: true })
  nonce?: string | null;

  /** OpenID Connect: when the user signed in (their session's start), the ID token's auth_time. */
  @Property({ type: DateTimeType, nullable: true })
  authTime?: Date | null;

  @Property({ type: DateTimeType })
  expiresAt!: Date;

  @Property({ type: DateTimeType, nullable: true })
  usedAt?: Date | null;

  @Property({ type: DateTimeType })
  createdAt!: Date;
}

/** A refresh token. Rotation keeps one family; reuse of a used member revokes the family. */
@Entity({ tableName: 'oauth_refresh_tokens' })
@Index({ properties: ['familyId'] })
export class RefreshToken {
  @PrimaryKey({ type: 'uuid' })
  id: string = randomUUID();

  @Property({ type: 'string', length: 64, unique: true, hidden: true })
  tokenHash!: string;

  @Property({ type: 'uuid' })
  familyId!: string;

  @Property({ type: 'string', length: 64, index: true })
  clientId!: string;

  @Property({ type: 'uuid' })
  userId!: string;

  @Property({ type: 'uuid' })
  accountId!: string;

  /** The grant of the family; a refresh may narrow the access token, never this. */
  @Property({ type: 'json' })
  scopes: string[] = [];

  /** The authorization code the family came from (code reuse revokes it). */
  @Property({ type: 'uuid', nullable: true, index: true })
  codeId?: string | null;

  @Property({ type: DateTimeType })
  expiresAt!: Date;

  /** Set when rotated: presenting this token again is reuse. */
  @Property({ type: DateTimeType, nullable: true })
  usedAt?: Date | null;

  @Property({ type: DateTimeType, nullable: true })
  revokedAt?: Date | null;

  @Property({ type: DateTimeType })
  createdAt!: Date;
}

/**
 * One row per issued JWT access token: the token itself is never stored, but its jti lets us
 * revoke by code, family or client, and revoked rows that have not expired are the deny-list.
 */
@Entity({ tableName: 'oauth_access_tokens' })
@Index({ properties: ['revokedAt', 'expiresAt'] })
export class AccessTokenRecord {
  @PrimaryKey({ type: 'uuid' })
  jti!: string;

  @Property({ type: 'string', length: 64, index: true })
  clientId!: string;

  @Property({ type: 'uuid', nullable: true })
  userId?: string | null;

  @Property({ type: 'uuid' })
  accountId!: string;

  @Property({ type: 'uuid', nullable: true, index: true })
  familyId?: string | null;

  @Property({ type: 'uuid', nullable: true, index: true })
  codeId?: string | null;

  @Property({ type: DateTimeType })
  expiresAt!: Date;

  @Property({ type: DateTimeType, nullable: true })
  revokedAt?: Date | null;

  @Property({ type: DateTimeType })
  createdAt!: Date;
}

/** A private JWK sealed with the secret box: `sb1.…` of its JSON. */
export interface SealedJwk {
  sealed: string;
}

/**
 * An ES256 signing key. The private JWK lives in the database, sealed with the secret box, so
 * every process (and the CLI) signs with the same key without a key-management service; see
 * src/auth/README.md for the trade-off.
 */
@Entity({ tableName: 'oauth_signing_keys' })
export class SigningKey {
  @PrimaryKey({ type: 'string', length: 64 })
  kid!: string;

  /** Sealed; a plain JWK only in rows written before sealing existed, until the next start seals them. */
  @Property({ type: 'json', hidden: true })
  privateJwk!: SealedJwk | Record<string, unknown>;

  @Property({ type: 'json' })
  publicJwk!: Record<string, unknown>;

  @Property({ type: DateTimeType })
  createdAt!: Date;

  /**
   * When it starts signing: a rotated-in key is published first and signs only once cached
   * JWKS copies have expired. (The column is nullable only because SQLite cannot add a NOT NULL
   * column to a filled table; the migration sets it on every existing row.)
   */
  @Property({ type: DateTimeType })
  activatesAt!: Date;

  /** When a newer key took (or takes) over; still published until its last token has expired. */
  @Property({ type: DateTimeType, nullable: true })
  retiredAt?: Date | null;
}

/** A signed-in browser (console and the OAuth login step). The cookie holds the secret; we keep its hash. */
@Entity({ tableName: 'auth_sessions' })
export class AuthSession {
  @PrimaryKey({ type: 'uuid' })
  id: string = randomUUID();

  @Property({ type: 'string', length: 64, unique: true, hidden: true })
  tokenHash!: string;

  @Property({ type: 'uuid' })
  userId!: string;

  @Property({ type: 'uuid' })
  accountId!: string;

  /** Bound to the session: every form posted while signed in must carry it. */
  @Property({ type: 'string', length: 64, hidden: true })
  csrfToken!: string;

  /**
   * A secret to show once on the page a console action redirects to (sealed JSON); cleared when
   * that page is read, so a reload or Back shows it no more.
   */
  @Property({ type: 'text', nullable: true, hidden: true })
  flash?: string | null;

  @Property({ type: DateTimeType })
  expiresAt!: Date;

  @Property({ type: DateTimeType })
  createdAt!: Date;
}

export const authEntities = [
  OAuthClient,
  AuthorizationCode,
  RefreshToken,
  AccessTokenRecord,
  SigningKey,
  AuthSession,
];
