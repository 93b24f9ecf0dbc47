import { createHash, createHmac, randomUUID } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdir, rename, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { finished } from 'node:stream/promises';
import type { EntityManager } from '@mikro-orm/knex';
import type { FilterQuery } from '@mikro-orm/core';
import type { Page } from '../gateway/connection.js';
import type { AppServices } from '../gateway/context.js';
import { constantTimeEqual } from '../kernel/crypto.js';
import { AppError, badInput, notFound } from '../kernel/errors.js';
import { isUuid } from '../accounts/service.js';
import type { Principal } from '../kernel/principal.js';
import { stageEvents } from '../events/stage.js';
import { findOwned, findPage, tenant, type Deps } from './common.js';
import { AttachmentType, Document, DocumentKind, PortCall, ServiceOrder, Vessel } from './entities.js';
import { parseEnum, requireText } from './validation.js';

/**
 * Documents: metadata in the database, content on local disk addressed by its SHA-256
 * (`<dir>/ab/abcdef…`), so identical uploads share one file. Content is hashed, size-limited and
 * type-checked while it streams to a temp file, which is renamed into place only when complete.
 */

const isText = (head: Buffer) => !head.includes(0) && isUtf8Prefix(head);

/** Declared content type → check of the first bytes (magic numbers; text must be NUL-free UTF-8). */
export const CONTENT_TYPES: Readonly<Record<string, (head: Buffer) => boolean>> = {
  'application/pdf': (h) => h.subarray(0, 5).toString('latin1') === '%PDF-',
  'image/png': (h) => h.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])),
  'image/jpeg': (h) => h[0] === 0xff && h[1] === 0xd8 && h[2] === 0xff,
  'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet': (h) =>
    h.subarray(0, 4).equals(Buffer.from([0x50, 0x4b, 0x03, 0x04])),
  'text/plain': isText,
  'text/csv': isText,
};

/** Bytes looked at before deciding the type; more than every magic number. */
const SNIFF_BYTES = 512;

function isUtf8Prefix(head: Buffer): boolean {
  // A multi-byte character may be cut at the end of the sniffed prefix; allow up to 3 trailing bytes.
  for (let cut = 0; cut <= 3 && cut < head.length + 1; cut++) {
    try {
      new TextDecoder('utf-8', { fatal: true }).decode(head.subarray(0, head.length - cut));
      return true;
    } catch {
      /* try a shorter prefix */
    }
  }
  return false;
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
        if (head.length >= SNIFF_BYTES && !CONTENT_TYPES[contentType]!(head))
          failure = wrongContent(contentType);
      }
      if (failure) continue;
      hash.update(chunk);
      if (!out.write(chunk)) await new Promise<void>((resolve) => out.once('drain', () => resolve()));
    }
    if (!failure && size === 0) failure = badInput('file', 'is empty');
    if (!failure && head.length < SNIFF_BYTES && !CONTENT_TYPES[contentType]!(head))
      failure = wrongContent(contentType);
    out.end();
    await finished(out);
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
    `The content does not look like ${contentType} (its first bytes do not match)`,
    { field: 'file', contentType },
  );
}

/** Records the stored content; if the database write fails, new content is removed again. */
export async function createDocument(
  deps: Deps & { documentsDir: string },
  uploadedBy: string,
  meta: DocumentMeta & { accountId: string },
  stored: StoredContent,
): Promise<Document> {
  try {
    const { document, events } = await deps.em.transactional(async (tx) => {
      const document = tx.create(Document, {
        ...meta,
        sha256: stored.sha256,
        sizeBytes: stored.sizeBytes,
        uploadedBy,
        createdAt: deps.clock.now(),
      });
      tx.persist(document);
      const events = stageEvents(tx, deps.clock, [
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
    if (stored.created) await rm(contentPath(deps.documentsDir, stored.sha256), { force: true });
    throw error;
  }
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
  if (filter.attachedId) where.attachedId = filter.attachedId;
  if (filter.kind) where.kind = parseEnum(DocumentKind, filter.kind, 'kind');
  return findPage(em, Document, where, { createdAt: 'desc', id: 'asc' }, page);
}

// ---------------------------------------------------------------- signed upload URLs

export const UPLOAD_URL_TTL_MS = 15 * 60 * 1000;

interface UploadClaims extends DocumentMeta {
  accountId: string;
  uploadedBy: string;
  exp: number;
}

function sign(secret: string, body: string): string {
  return createHmac('sha256', secret).update(body).digest('base64url');
}

/** `<base64url(claims)>.<HMAC-SHA256>`: the URL itself is the credential, for 15 minutes, for this one target. */
/** The HMAC key of upload URLs: DOCUMENT_UPLOAD_SECRET, else derived from the master key (same in every process). */
export function uploadSecret(services: AppServices): string {
  return (
    services.config.documentUploadSecret ??
    services.secrets.derive('tidegate/document-upload').toString('base64url')
  );
}

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
