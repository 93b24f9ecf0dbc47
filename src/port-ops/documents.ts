import { createHash, createHmac, randomUUID } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdir, open, rename, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { finished } from 'node:stream/promises';
import type { EntityManager } from '@mikro-orm/knex';
import type { FilterQuery } from '@mikro-orm/core';
import type { Page } from '../gateway/schema/connection.js';
import type {} from '../gateway/schema/context.js';
import type { Config } from '../config.js';
import type { SecretBox } from '../kernel/secret-box.js';
import { constantTimeEqual } from '../kernel/crypto.js';
import { AppError, badInput, conflict, notFound } from '../kernel/errors.js';
import { isUuid, requireUuid } from '../kernel/ids.js';
import type { Plan } from '../kernel/plans.js';
import type { CredentialKind, Principal } from '../kernel/principal.js';
import { stageEvents } from '../events/stage.js';
import { actorOf, findOwned, findPage, lockPortCall, tenant, uniqueConflict, type Deps } from './common.js';
import {
  AttachmentType,
  Document,
  DocumentKind,
  PortCall,
  ServiceOrder,
  UsedUploadToken,
  Vessel,
} from './entities.js';
import { parseEnum, requireText } from '../kernel/text.js';

/**
 * Documents: metadata in the database, content on local disk addressed by its SHA-256
 * (`<dir>/ab/abcdef…`), so identical uploads share one file. Content is hashed, size-limited and
 * type-checked while it streams to a temp file, which is renamed into place only when complete.
 */

/**
 * What the bytes of each allowed type must look like. `head` sees the first SNIFF_BYTES (or the
 * whole file when shorter); `body` sees every chunk as it streams; `file` sees the complete temp
 * file before it is kept. A declared type whose bytes fail any check is refused (415).
 */
interface ContentRule {
  head(head: Buffer): boolean;
  body?(): { chunk(chunk: Buffer): boolean; end(): boolean };
  file?(path: string, size: number): Promise<boolean>;
}

/**
 * Text that a browser or viewer would treat as something else must not pass as text/plain or
 * text/csv: the WHATWG MIME-sniffing HTML/XML signatures (after an optional BOM and whitespace)
 * and the PDF signature.
 */
const ACTIVE_CONTENT =
  /^(?:\uFEFF)?[\t\n\f\r ]*(?:<(?:!doctype html|html|head|script|iframe|h1|div|font|table|a|style|title|b|body|br|p|svg|\?xml)[\t\n\f\r >]|<!--|%PDF-)/i;

/** Text: valid UTF-8 from the first byte to the last, no NUL, and not HTML, XML or PDF in disguise. */
const TEXT: ContentRule = {
  head: (h) => !ACTIVE_CONTENT.test(h.toString('utf8')),
  body() {
    const decoder = new TextDecoder('utf-8', { fatal: true });
    const valid = (decode: () => unknown) => {
      try {
        decode();
        return true;
      } catch {
        return false;
      }
    };
    return {
      chunk: (c) => !c.includes(0) && valid(() => decoder.decode(c, { stream: true })),
      end: () => valid(() => decoder.decode()),
    };
  },
};

const ZIP_LOCAL_HEADER = Buffer.from([0x50, 0x4b, 0x03, 0x04]);

/** xlsx: a ZIP whose central directory lists `[Content_Types].xml` and a workbook part under `xl/`. */
const XLSX: ContentRule = {
  head: (h) => h.subarray(0, 4).equals(ZIP_LOCAL_HEADER),
  async file(path, size) {
    const names = await zipEntryNames(path, size);
    return names.includes('[Content_Types].xml') && names.some((n) => n.startsWith('xl/'));
  },
};

/** Declared content type → what its bytes must look like (magic numbers, text rules, ZIP directory). */
export const CONTENT_TYPES: Readonly<Record<string, ContentRule>> = {
  'application/pdf': { head: (h) => h.subarray(0, 5).toString('latin1') === '%PDF-' },
  'image/png': {
    head: (h) => h.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])),
  },
  'image/jpeg': { head: (h) => h[0] === 0xff && h[1] === 0xd8 && h[2] === 0xff },
  'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet': XLSX,
  'text/plain': TEXT,
  'text/csv': TEXT,
};

/** Bytes looked at before deciding the type; more than every magic number. */
const SNIFF_BYTES = 512;

/**
 * The entry names of a ZIP file's central directory, read from its end-of-central-directory
 * record (within the last 64 KiB + 22 bytes). An unreadable directory yields no names.
 */
async function zipEntryNames(path: string, size: number): Promise<string[]> {
  const file = await open(path, 'r');
  try {
    const tailLength = Math.min(size, 0xffff + 22);
    const tail = Buffer.alloc(tailLength);
    await file.read(tail, 0, tailLength, size - tailLength);
    let eocd = -1;
    for (let i = tailLength - 22; i >= 0; i--) {
      if (tail.readUInt32LE(i) === 0x06054b50) {
        eocd = i;
        break;
      }
    }
    if (eocd < 0) return [];
    const entries = tail.readUInt16LE(eocd + 10);
    const directorySize = tail.readUInt32LE(eocd + 12);
    const directoryOffset = tail.readUInt32LE(eocd + 16);
    if (directoryOffset + directorySize > size) return [];
    const directory = Buffer.alloc(directorySize);
    await file.read(directory, 0, directorySize, directoryOffset);
    const names: string[] = [];
    let at = 0;
    for (let i = 0; i < entries && at + 46 <= directory.length; i++) {
      if (directory.readUInt32LE(at) !== 0x02014b50) return [];
      const nameLength = directory.readUInt16LE(at + 28);
      const extraLength = directory.readUInt16LE(at + 30);
      const commentLength = directory.readUInt16LE(at + 32);
      names.push(directory.subarray(at + 46, at + 46 + nameLength).toString('utf8'));
      at += 46 + nameLength + extraLength + commentLength;
    }
    return names;
  } finally {
    await file.close();
  }
}

export function parseContentType(raw: string | undefined): string {
  const value = (raw ?? '').split(';')[0]!.trim().toLowerCase();
  if (!CONTENT_TYPES[value]) {
    throw new AppError(
      'UNSUPPORTED_MEDIA_TYPE',
      `Content type '${value || '(none)'}' is not accepted; use one of ${Object.keys(CONTENT_TYPES).join(', ')}`,
      {
        field: 'contentType',
        allowed: Object.keys(CONTENT_TYPES),
      },
    );
  }
  return value;
}

export interface DocumentMeta {
  kind: DocumentKind;
  attachedType: AttachmentType;
  attachedId: string;
  fileName: string;
  contentType: string;
}

export interface DocumentMetaInput {
  kind?: unknown;
  attachedType?: unknown;
  attachedId?: unknown;
  fileName?: unknown;
  contentType?: string;
}

/** Validates the metadata and that the caller may attach to the target, before any byte is stored. */
export async function prepareDocument(
  em: EntityManager,
  principal: Principal,
  input: DocumentMetaInput,
): Promise<DocumentMeta & { accountId: string }> {
  const kind = parseEnum(DocumentKind, input.kind, 'kind');
  const attachedType = parseEnum(AttachmentType, input.attachedType, 'attachedType');
  if (typeof input.attachedId !== 'string' || !input.attachedId) throw badInput('attachedId', 'is required');
  const fileName = requireText(
    typeof input.fileName === 'string' ? input.fileName.replace(/[\\/\r\n"]/g, '_') : '',
    'fileName',
    255,
  );
  const contentType = parseContentType(input.contentType);
  const target =
    attachedType === AttachmentType.PORT_CALL
      ? await findOwned(em, PortCall, 'PortCall', principal, input.attachedId)
      : attachedType === AttachmentType.SERVICE_ORDER
        ? await findOwned(em, ServiceOrder, 'ServiceOrder', principal, input.attachedId)
        : await findVessel(em, input.attachedId);
  // Documents on shared vessels belong to the uploader's account; others to the target's owner.
  const accountId = 'accountId' in target ? target.accountId : principal.accountId;
  return { kind, attachedType, attachedId: target.id, fileName, contentType, accountId };
}

/** Vessels are shared reference data: any caller may attach to any vessel. */
async function findVessel(em: EntityManager, id: string): Promise<Vessel> {
  const vessel = isUuid(id) ? await em.findOne(Vessel, { id }) : null;
  if (!vessel) throw notFound('Vessel', id);
  return vessel;
}

export function contentPath(dir: string, sha256: string): string {
  return join(dir, sha256.slice(0, 2), sha256);
}

export interface StoredContent {
  sha256: string;
  sizeBytes: number;
  /** True when this upload created the file (so a failed database write may remove it). */
  created: boolean;
}

/**
 * Streams content to `<dir>/tmp/<uuid>`, hashing and counting; checks the first bytes against
 * the declared type; renames into its content address when complete. On any failure the temp
 * file is removed and the rest of the body is drained, so the client gets a clean answer.
 */
export async function storeContent(
  dir: string,
  maxBytes: number,
  contentType: string,
  source: Readable,
): Promise<StoredContent> {
  const tmpDir = join(dir, 'tmp');
  await mkdir(tmpDir, { recursive: true });
  const tmp = join(tmpDir, randomUUID());
  const out = createWriteStream(tmp, { flags: 'wx' });
  const hash = createHash('sha256');
  const rule = CONTENT_TYPES[contentType]!;
  const body = rule.body?.();
  let size = 0;
  let head = Buffer.alloc(0);
  let failure: AppError | undefined;
  try {
    for await (const chunk of source as AsyncIterable<Buffer>) {
      if (failure) continue; // drain
      size += chunk.length;
      if (size > maxBytes) {
        failure = new AppError('PAYLOAD_TOO_LARGE', `The document exceeds the limit of ${maxBytes} bytes`, {
          maxBytes,
        });
        continue;
      }
      if (head.length < SNIFF_BYTES) {
        head = Buffer.concat([head, chunk.subarray(0, SNIFF_BYTES - head.length)]);
        if (head.length >= SNIFF_BYTES && !rule.head(head)) failure = wrongContent(contentType);
      }
      if (!failure && body && !body.chunk(chunk)) failure = wrongContent(contentType);
      if (failure) continue;
      hash.update(chunk);
      if (!out.write(chunk)) await new Promise<void>((resolve) => out.once('drain', () => resolve()));
    }
    if (!failure && size === 0) failure = badInput('file', 'is empty');
    if (!failure && head.length < SNIFF_BYTES && !rule.head(head)) failure = wrongContent(contentType);
    if (!failure && body && !body.end()) failure = wrongContent(contentType);
    out.end();
    await finished(out);
    if (!failure && rule.file && !(await rule.file(tmp, size))) failure = wrongContent(contentType);
    if (failure) throw failure;
    const sha256 = hash.digest('hex');
    const target = contentPath(dir, sha256);
    const existed = await stat(target).then(
      () => true,
      () => false,
    );
    await mkdir(join(dir, sha256.slice(0, 2)), { recursive: true });
    if (existed) await rm(tmp, { force: true });
    else await rename(tmp, target);
    return { sha256, sizeBytes: size, created: !existed };
  } catch (error) {
    out.destroy();
    await rm(tmp, { force: true });
    throw error;
  }
}

function wrongContent(contentType: string): AppError {
  return new AppError(
    'UNSUPPORTED_MEDIA_TYPE',
    `The content does not look like ${contentType} (its bytes do not match the declared type)`,
    { field: 'file', contentType },
  );
}

/** A signed upload URL being redeemed: its id is recorded with the document, so it works once. */
export interface UploadTokenUse {
  id: string;
  expiresAt: Date;
}

const tokenReplayed = () =>
  conflict('This upload URL has already been used; ask createDocumentUpload for a new one', {
    reason: 'UPLOAD_URL_USED',
  });

/**
 * Records the stored content in one transaction (the document, its event and, for a signed URL,
 * the used token id). If that fails, content this upload created is removed again unless a
 * committed document shares it (a concurrent identical upload that won).
 */
export async function createDocument(
  deps: Deps & { documentsDir: string },
  uploadedBy: string,
  meta: DocumentMeta & { accountId: string },
  stored: StoredContent,
  token?: UploadTokenUse,
): Promise<Document> {
  try {
    const { document, events } = await deps.em.transactional(async (tx) => {
      const now = deps.clock.now();
      // The call cannot be deleted while its document is being recorded.
      if (meta.attachedType === AttachmentType.PORT_CALL) await lockPortCall(tx, meta.attachedId);
      const document = tx.create(Document, {
        ...meta,
        sha256: stored.sha256,
        sizeBytes: stored.sizeBytes,
        uploadedBy,
        createdAt: now,
      });
      if (token) {
        // The document row first: the token row refers to it.
        await tx.persist(document).flush();
        await tx.nativeDelete(UsedUploadToken, { expiresAt: { $lt: now } });
        await tx.insert(UsedUploadToken, {
          id: token.id,
          documentId: document.id,
          expiresAt: token.expiresAt,
          usedAt: now,
        });
      } else tx.persist(document);
      const events = await stageEvents(tx, deps, [
        {
          type: 'document.uploaded',
          accountId: meta.accountId,
          payload: {
            documentId: document.id,
            kind: meta.kind,
            sha256: stored.sha256,
            sizeBytes: stored.sizeBytes,
            contentType: meta.contentType,
            attachedTo: { type: meta.attachedType, id: meta.attachedId },
          },
        },
      ]);
      return { document, events };
    });
    await deps.events.publish(events);
    return document;
  } catch (error) {
    // A unique violation on a token id waits for the winner to commit, so this count sees it.
    if (stored.created && (await deps.em.fork().count(Document, { sha256: stored.sha256 })) === 0)
      await rm(contentPath(deps.documentsDir, stored.sha256), { force: true });
    throw uniqueConflict(error, { document_upload_tokens: tokenReplayed });
  }
}

/** Refuses a signed URL that has already created its document, before any byte is stored. */
export async function assertUploadUnused(em: EntityManager, tokenId: string): Promise<void> {
  if (await em.count(UsedUploadToken, { id: tokenId })) throw tokenReplayed();
}

export interface DocumentFilter {
  attachedType?: AttachmentType | null;
  attachedId?: string | null;
  kind?: DocumentKind | null;
}

export async function listDocuments(
  em: EntityManager,
  principal: Principal,
  filter: DocumentFilter,
  page: Page,
) {
  const where: FilterQuery<Document> = { ...tenant(principal) };
  if (filter.attachedType)
    where.attachedType = parseEnum(AttachmentType, filter.attachedType, 'attachedType');
  if (filter.attachedId) where.attachedId = requireUuid(filter.attachedId, 'attachedId');
  if (filter.kind) where.kind = parseEnum(DocumentKind, filter.kind, 'kind');
  return findPage(em, Document, where, { createdAt: 'desc', id: 'asc' }, page);
}

// ---------------------------------------------------------------- signed upload URLs

export const UPLOAD_URL_TTL_MS = 15 * 60 * 1000;

/**
 * What a signed upload URL carries: the checked metadata, a token id (single use), its expiry,
 * and who made it, so the PUT is attributed to and counted against that credential.
 */
export interface UploadClaims extends DocumentMeta {
  jti: string;
  accountId: string;
  uploadedBy: string;
  exp: number;
  creator: { accountId: string; plan: Plan; kind: CredentialKind; id: string };
}

/** The creator of a signed URL as a principal for admission (rate limits); it carries no scopes. */
export function creatorPrincipal(claims: UploadClaims): Principal {
  const { accountId, plan, kind, id } = claims.creator;
  return { accountId, plan, scopes: new Set(), credential: { kind, id } };
}

/** The claims a signed URL gets for a checked upload by this principal. */
export function uploadClaims(
  principal: Principal,
  meta: DocumentMeta & { accountId: string },
  expiresAt: Date,
): UploadClaims {
  return {
    ...meta,
    jti: randomUUID(),
    uploadedBy: actorOf(principal),
    exp: expiresAt.getTime(),
    creator: {
      accountId: principal.accountId,
      plan: principal.plan,
      kind: principal.credential.kind,
      id: principal.credential.id,
    },
  };
}

function sign(secret: string, body: string): string {
  return createHmac('sha256', secret).update(body).digest('base64url');
}

declare module '../gateway/schema/context.js' {
  interface AppServices {
    /** The HMAC key of upload URLs (`uploadSecretOf`), worked out once by the composition root. */
    documentUploadSecret: string;
  }
}

/** The HMAC key of upload URLs: DOCUMENT_UPLOAD_SECRET, else derived from the master key (same in every process). */
export function uploadSecretOf(
  config: Pick<Config, 'documentUploadSecret'>,
  secrets: Pick<SecretBox, 'derive'>,
): string {
  return config.documentUploadSecret ?? secrets.derive('tidegate/document-upload').toString('base64url');
}

/** `<base64url(claims)>.<HMAC-SHA256>`: the URL itself is the credential, once, for 15 minutes, for this one target. */
export function signUpload(secret: string, claims: UploadClaims): string {
  const body = Buffer.from(JSON.stringify(claims)).toString('base64url');
  return `${body}.${sign(secret, body)}`;
}

export function verifyUpload(secret: string, token: string, now: Date): UploadClaims {
  const [body, mac] = token.split('.');
  if (!body || !mac || !constantTimeEqual(mac, sign(secret, body)))
    throw new AppError('UNAUTHENTICATED', 'The upload URL is invalid');
  const claims = JSON.parse(Buffer.from(body, 'base64url').toString()) as UploadClaims;
  if (claims.exp < now.getTime())
    throw new AppError('UNAUTHENTICATED', 'The upload URL has expired; ask for a new one');
  return claims;
}

/**
 * `Content-Disposition: attachment` for any stored file name: an ASCII fallback `filename` for
 * old clients and the exact name as RFC 8187 `filename*` (RFC 6266). Node refuses header values
 * outside Latin-1, so the raw name can never go into the header as it is.
 */
export function contentDisposition(fileName: string): string {
  const fallback = fileName.replace(/[^\x20-\x7e]|["\\%]/g, '_');
  const encoded = encodeURIComponent(fileName).replace(
    /['()*]/g,
    (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
  );
  return `attachment; filename="${fallback}"; filename*=UTF-8''${encoded}`;
}
