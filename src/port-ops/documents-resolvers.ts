import {
  Arg,
  Args,
  Ctx,
  Field,
  FieldResolver,
  Float,
  ID,
  InputType,
  Mutation,
  ObjectType,
  Query,
  Resolver,
  Root,
} from 'type-graphql';
import { Connection } from '../gateway/schema/connection.js';
import { requirePrincipal, type GatewayContext } from '../gateway/schema/context.js';
import { RequiresScopes } from '../gateway/schema/directives.js';
import { OffsetPageArgs, pageEchoResolver, pageOf, pagedConnection } from '../gateway/schema/paging.js';
import { findOwnedOrNull } from './common.js';
import { listDocuments, prepareDocument, signUpload, uploadClaims, UPLOAD_URL_TTL_MS } from './documents.js';
import { AttachmentType, Document, DocumentKind } from './entities.js';

@InputType()
class DocumentUploadInput {
  @Field(() => DocumentKind) kind!: DocumentKind;
  @Field(() => AttachmentType) attachedType!: AttachmentType;
  @Field(() => ID) attachedId!: string;
  @Field(() => String) fileName!: string;
  @Field(() => String, {
    description: 'One of application/pdf, image/png, image/jpeg, text/plain, text/csv, xlsx.',
  })
  contentType!: string;
}

@ObjectType({
  description:
    'Where and how to send the file: PUT the raw bytes to `uploadUrl` with the declared Content-Type.',
})
class DocumentUpload {
  @Field(() => String, { description: 'Path on this service; the signed token in it is the credential.' })
  uploadUrl!: string;
  @Field(() => String) method!: string;
  @Field(() => String) contentType!: string;
  @Field(() => Float) maxBytes!: number;
  @Field(() => Date) expiresAt!: Date;
}

export const DocumentConnection = Connection(Document, 'Document');

@Resolver(() => Document)
export class DocumentResolver {
  @Query(() => Document, { nullable: true })
  @RequiresScopes('read:documents')
  async document(@Arg('id', () => ID) id: string, @Ctx() ctx: GatewayContext): Promise<Document | null> {
    return findOwnedOrNull(ctx.em, Document, requirePrincipal(ctx), id);
  }

  @Query(() => DocumentConnection, {
    description: 'Documents, newest first, optionally those attached to one record.',
  })
  @RequiresScopes('read:documents')
  async documents(
    @Args(() => OffsetPageArgs) args: OffsetPageArgs,
    @Arg('attachedType', () => AttachmentType, { nullable: true }) attachedType: AttachmentType | null,
    @Arg('attachedId', () => ID, { nullable: true }) attachedId: string | null,
    @Arg('kind', () => DocumentKind, { nullable: true }) kind: DocumentKind | null,
    @Ctx() ctx: GatewayContext,
  ) {
    const page = pageOf(args);
    return pagedConnection(
      await listDocuments(ctx.em, requirePrincipal(ctx), { attachedType, attachedId, kind }, page),
      page,
    );
  }

  @Mutation(() => DocumentUpload, {
    description:
      "Checks the metadata and target, then returns a signed upload URL, valid once for 15 minutes; the PUT counts against this credential's port-operations rate limit. The multipart POST /v1/documents applies this same rule.",
  })
  @RequiresScopes('write:documents')
  async createDocumentUpload(
    @Arg('input', () => DocumentUploadInput) input: DocumentUploadInput,
    @Ctx() ctx: GatewayContext,
  ): Promise<DocumentUpload> {
    const principal = requirePrincipal(ctx);
    const meta = await prepareDocument(ctx.em, principal, input);
    const expiresAt = new Date(ctx.services.clock.now().getTime() + UPLOAD_URL_TTL_MS);
    const token = signUpload(ctx.services.documentUploadSecret, uploadClaims(principal, meta, expiresAt));
    return {
      uploadUrl: `/v1/documents/uploads?token=${token}`,
      method: 'PUT',
      contentType: meta.contentType,
      maxBytes: ctx.services.config.documentMaxBytes,
      expiresAt,
    };
  }

  @FieldResolver(() => String, {
    description: 'GET this path (same credentials, read:documents) for the content.',
  })
  downloadUrl(@Root() document: Document): string {
    return `/v1/documents/${document.id}/content`;
  }
}

export const documentResolvers = [DocumentResolver, pageEchoResolver(DocumentConnection)];
