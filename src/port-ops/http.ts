import { createReadStream } from 'node:fs';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import multipart from '@fastify/multipart';
import { loggableUrl } from '../gateway/doors/edge/hooks.js';
import type { AppServices } from '../gateway/schema/context.js';
import type { Operations } from '../gateway/pipeline/operation.js';
import type { DescribedRoute } from '../gateway/doors/openapi.js';
import { admitField, authorizeField } from '../gateway/doors/rest.js';
import { badInput } from '../kernel/errors.js';
import { actorOf, findOwned } from './common.js';
import {
  assertUploadUnused,
  CONTENT_TYPES,
  contentDisposition,
  contentPath,
  createDocument,
  creatorPrincipal,
  prepareDocument,
  storeContent,
  verifyUpload,
  type DocumentMetaInput,
} from './documents.js';
import { AttachmentType, Document, DocumentKind } from './entities.js';

/*
 * The only hand-written port-ops routes, because they stream: multipart upload, signed-URL
 * upload and download. Each applies the access rule of the schema field whose work it does.
 */

const UPLOAD_AUDIT = { audit: 'POST /v1/documents' };
/** The schema field whose access rule and budget document uploads apply. */
const UPLOAD_FIELD = 'Mutation.createDocumentUpload';

/** Fastify's request log entry with credentials in the query string (the upload `token`) replaced. */
function redactedRequest(request: FastifyRequest): Record<string, unknown> {
  return {
    method: request.method,
    url: loggableUrl(request.url),
    host: request.host,
    remoteAddress: request.ip,
    remotePort: request.socket?.remotePort,
  };
}

export async function registerDocumentRoutes(
  app: FastifyInstance,
  services: AppServices,
  operations: Operations,
): Promise<void> {
  const deps = () => ({
    em: services.db.em(),
    clock: services.clock,
    events: services.events,
    documentsDir: services.config.documentsDir,
  });

  await app.register(async (scope) => {
    // Our own byte counter enforces the limit (413 and nothing kept); busboy's is one byte looser.
    await scope.register(multipart, {
      limits: { fileSize: services.config.documentMaxBytes + 1, files: 1, fields: 10, fieldSize: 1024 },
    });
    // The signed-URL PUT takes the raw body as a stream, whatever its type.
    scope.addContentTypeParser('*', (_request, _payload, done) => done(null));

    /** Multipart: fields kind, attachedType, attachedId (before the file), then one `file` part. */
    const upload = async (request: FastifyRequest, reply: FastifyReply) => {
      const principal = await authorizeField(operations, request, reply, UPLOAD_FIELD);
      if (!request.isMultipart())
        throw badInput(
          'body',
          'must be multipart/form-data with fields kind, attachedType, attachedId and a file part',
        );
      const { em, ...rest } = deps();
      const fields: Record<string, unknown> = {};
      for await (const part of request.parts()) {
        if (part.type === 'field') {
          fields[part.fieldname] = part.value;
          continue;
        }
        if (part.fieldname !== 'file') throw badInput(part.fieldname, "the file part must be named 'file'");
        const meta = await prepareDocument(em, principal, {
          ...(fields as DocumentMetaInput),
          fileName: fields.fileName ?? part.filename,
          contentType: part.mimetype,
        }).catch(async (error: unknown) => {
          part.file.resume();
          throw error;
        });
        const stored = await storeContent(
          services.config.documentsDir,
          services.config.documentMaxBytes,
          meta.contentType,
          part.file,
        );
        const document = await createDocument({ em, ...rest }, actorOf(principal), meta, stored);
        return reply.code(201).send(documentJson(document));
      }
      throw badInput('file', 'is required (a multipart part named file, after the fields)');
    };
    for (const prefix of ['', '/api']) {
      scope.post(`${prefix}/v1/documents`, { config: UPLOAD_AUDIT }, upload);
      scope.put(
        `${prefix}/v1/documents/uploads`,
        {
          config: { audit: 'PUT /v1/documents/uploads' },
          // The token in the query string is a credential: it must not reach the request log.
          logSerializers: { req: redactedRequest },
        },
        async (request, reply) => {
          // The signed URL is the credential: createDocumentUpload already applied write:documents.
          const claims = verifyUpload(
            services.documentUploadSecret,
            String((request.query as { token?: string }).token ?? ''),
            services.clock.now(),
          );
          const declared = (request.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
          const refuse = (error: unknown) => {
            request.raw.resume();
            throw error;
          };
          if (declared !== claims.contentType) {
            refuse(
              badInput(
                'content-type',
                `must be ${claims.contentType}, as declared when the upload URL was made (got '${declared || '(none)'}')`,
              ),
            );
          }
          await assertUploadUnused(services.db.em(), claims.jti).catch(refuse);
          // The PUT is the creator's request: it spends that credential's port-operations budget.
          await admitField(operations, reply, creatorPrincipal(claims), UPLOAD_FIELD).catch(refuse);
          const stored = await storeContent(
            services.config.documentsDir,
            services.config.documentMaxBytes,
            claims.contentType,
            request.raw,
          );
          const { exp, jti, uploadedBy, creator: _creator, ...meta } = claims;
          const document = await createDocument(deps(), uploadedBy, meta, stored, {
            id: jti,
            expiresAt: new Date(exp),
          });
          return reply.code(201).send(documentJson(document));
        },
      );
      scope.get(
        `${prefix}/v1/documents/:id/content`,
        { config: { audit: 'GET /v1/documents/:id/content' } },
        async (request, reply) => {
          const principal = await authorizeField(operations, request, reply, 'Query.document');
          const document = await findOwned(
            services.db.em(),
            Document,
            'Document',
            principal,
            (request.params as { id: string }).id,
          );
          reply
            .header('content-type', document.contentType)
            .header('content-length', String(document.sizeBytes))
            .header('content-disposition', contentDisposition(document.fileName))
            .header('etag', `"${document.sha256}"`)
            .header('x-content-type-options', 'nosniff');
          return reply.send(createReadStream(contentPath(services.config.documentsDir, document.sha256)));
        },
      );
    }
  });
}

export function documentJson(d: Document): Record<string, unknown> {
  return {
    id: d.id,
    kind: d.kind,
    attachedType: d.attachedType,
    attachedId: d.attachedId,
    fileName: d.fileName,
    contentType: d.contentType,
    sizeBytes: d.sizeBytes,
    sha256: d.sha256,
    uploadedBy: d.uploadedBy,
    createdAt: d.createdAt.toISOString(),
    downloadUrl: `/v1/documents/${d.id}/content`,
  };
}

const documentErrors = Object.fromEntries(
  [400, 401, 403, 404, 413, 429].map((s) => [
    String(s),
    s === 413
      ? { description: 'The file is larger than DOCUMENT_MAX_BYTES' }
      : { $ref: `#/components/responses/${s}` },
  ]),
);

/** The hand-written (streaming) document routes in the OpenAPI document. */
export const documentsOpenApi: DescribedRoute[] = [
  {
    method: 'post',
    path: '/v1/documents',
    operation: {
      operationId: 'UploadDocument',
      summary: 'Upload a document (multipart: the fields, then a part named file)',
      requestBody: {
        required: true,
        content: {
          'multipart/form-data': {
            schema: {
              type: 'object',
              required: ['kind', 'attachedType', 'attachedId', 'file'],
              properties: {
                kind: { type: 'string', enum: Object.values(DocumentKind) },
                attachedType: { type: 'string', enum: Object.values(AttachmentType) },
                attachedId: { type: 'string' },
                fileName: { type: 'string', description: "Defaults to the file part's file name" },
                file: {
                  description: `The bytes, last; its part's Content-Type is one of: ${Object.keys(CONTENT_TYPES).join(', ')}`,
                },
              },
            },
          },
        },
      },
      responses: {
        '201': { description: 'Stored', content: { 'application/json': { schema: { type: 'object' } } } },
        ...documentErrors,
      },
      security: [{ apiKey: [] }, { bearer: [] }, { oauth2: ['write:documents'] }],
    },
  },
  {
    method: 'put',
    path: '/v1/documents/uploads',
    operation: {
      operationId: 'PutDocumentUpload',
      summary:
        'Upload to a signed URL made by the createDocumentUpload mutation (the token is the credential)',
      parameters: [{ name: 'token', in: 'query', required: true, schema: { type: 'string' } }],
      requestBody: { required: true, content: { 'application/octet-stream': {} } },
      responses: {
        '201': { description: 'Stored', content: { 'application/json': { schema: { type: 'object' } } } },
        ...documentErrors,
      },
      security: [],
    },
  },
  {
    method: 'get',
    path: '/v1/documents/{id}/content',
    operation: {
      operationId: 'DocumentContent',
      summary: "The document's bytes, with its content type",
      parameters: [{ name: 'id', in: 'path', required: true, schema: { type: 'string' } }],
      responses: {
        '200': {
          description: 'The bytes, served with the content type the document was stored with',
          content: Object.fromEntries(Object.keys(CONTENT_TYPES).map((type) => [type, {}])),
        },
        ...documentErrors,
      },
      security: [{ apiKey: [] }, { bearer: [] }, { oauth2: ['read:documents'] }],
    },
  },
];
