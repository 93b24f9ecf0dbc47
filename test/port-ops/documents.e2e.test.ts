import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeEachDialect } from '../helpers/env.js';
import { createKey, gql, rest, startTestServer, type TestServer } from '../helpers/server.js';

const MAX = 4096;
const PDF = Buffer.concat([Buffer.from('%PDF-1.7\n'), Buffer.alloc(600, 0x41)]);

function filesUnder(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => join(e.parentPath, e.name));
}

describeEachDialect('port-ops documents', (dialect) => {
  let server: TestServer;
  let key: string;
  let dir: string;
  let portCallId: string;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'tidegate-docs-'));
    server = await startTestServer({ dialect, env: { DOCUMENTS_DIR: dir, DOCUMENT_MAX_BYTES: String(MAX) } });
    key = server.key('INSTITUTIONAL');
    portCallId = (await rest(server.url, '/v1/port-calls?status=SCHEDULED&limit=1', { key })).body.data[0].id;
  });
  afterAll(async () => {
    await server?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  function form(fields: Record<string, string>, file: Buffer, type: string, name = 'bdn.pdf'): FormData {
    const data = new FormData();
    for (const [k, v] of Object.entries(fields)) data.append(k, v);
    data.append('file', new Blob([file], { type }), name);
    return data;
  }

  const upload = (body: FormData, apiKey = key) =>
    fetch(`${server.url}/v1/documents`, { method: 'POST', headers: { 'x-api-key': apiKey }, body });
  const documentCount = async () =>
    (await rest(server.url, '/v1/documents?limit=100', { key })).body.total as number;

  it('uploads a PDF (multipart), stores it content-addressed, lists it and downloads the same bytes', async () => {
    const res = await upload(
      form(
        { kind: 'BUNKER_DELIVERY_NOTE', attachedType: 'PORT_CALL', attachedId: portCallId },
        PDF,
        'application/pdf',
      ),
    );
    expect(res.status).toBe(201);
    const doc = (await res.json()) as Record<string, string | number>;
    const sha = createHash('sha256').update(PDF).digest('hex');
    expect(doc).toMatchObject({
      kind: 'BUNKER_DELIVERY_NOTE',
      sha256: sha,
      sizeBytes: PDF.length,
      contentType: 'application/pdf',
      fileName: 'bdn.pdf',
    });
    expect(existsSync(join(dir, sha.slice(0, 2), sha))).toBe(true);

    const listed = await rest(server.url, `/v1/documents?attachedType=PORT_CALL&attachedId=${portCallId}`, {
      key,
    });
    expect(listed.body.data.map((d: { id: string }) => d.id)).toContain(doc.id);

    const download = await fetch(`${server.url}/v1/documents/${doc.id}/content`, {
      headers: { 'x-api-key': key },
    });
    expect(download.status).toBe(200);
    expect(download.headers.get('content-type')).toBe('application/pdf');
    expect(Buffer.from(await download.arrayBuffer()).equals(PDF)).toBe(true);
  });

  it('GraphQL hands out a signed upload URL; PUT to it stores the document', async () => {
    const text = Buffer.from('quantity,unit\n500,MT\n');
    const res = await gql(
      server.url,
      'mutation($input: DocumentUploadInput!) { createDocumentUpload(input: $input) { uploadUrl method contentType maxBytes expiresAt } }',
      {
        key,
        variables: {
          input: {
            kind: 'OTHER',
            attachedType: 'PORT_CALL',
            attachedId: portCallId,
            fileName: 'qty.csv',
            contentType: 'text/csv',
          },
        },
      },
    );
    expect(res.body.errors).toBeUndefined();
    const ticket = res.body.data!.createDocumentUpload as {
      uploadUrl: string;
      method: string;
      maxBytes: number;
    };
    expect(ticket).toMatchObject({ method: 'PUT', maxBytes: MAX });
    const put = await fetch(`${server.url}${ticket.uploadUrl}`, {
      method: 'PUT',
      headers: { 'content-type': 'text/csv' },
      body: text,
    });
    expect(put.status).toBe(201);
    expect(await put.json()).toMatchObject({
      fileName: 'qty.csv',
      sizeBytes: text.length,
      uploadedBy: expect.stringMatching(/^api_key:/),
    });

    const tampered = ticket.uploadUrl.replace(/.$/, (c) => (c === 'A' ? 'B' : 'A'));
    const bad = await fetch(`${server.url}${tampered}`, {
      method: 'PUT',
      headers: { 'content-type': 'text/csv' },
      body: text,
    });
    expect(bad.status).toBe(401);
  });

  it('oversize → 413 with nothing on disk or in the database', async () => {
    const before = await documentCount();
    const filesBefore = filesUnder(dir).length;
    const big = Buffer.concat([Buffer.from('%PDF-1.7\n'), Buffer.alloc(MAX + 10, 0x41)]);
    const res = await upload(
      form(
        { kind: 'CERTIFICATE', attachedType: 'PORT_CALL', attachedId: portCallId },
        big,
        'application/pdf',
        'big.pdf',
      ),
    );
    expect(res.status).toBe(413);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('PAYLOAD_TOO_LARGE');
    expect(await documentCount()).toBe(before);
    expect(filesUnder(dir).length).toBe(filesBefore);
  });

  it('wrong content type → 415, whether declared (not allowed) or sniffed (bytes do not match)', async () => {
    const before = await documentCount();
    const filesBefore = filesUnder(dir).length;
    const declared = await upload(
      form(
        { kind: 'OTHER', attachedType: 'PORT_CALL', attachedId: portCallId },
        Buffer.from('MZ\x90\x00'),
        'application/x-msdownload',
        'x.exe',
      ),
    );
    expect(declared.status).toBe(415);
    const sniffed = await upload(
      form(
        { kind: 'OTHER', attachedType: 'PORT_CALL', attachedId: portCallId },
        Buffer.from('GIF89a not a pdf at all'),
        'application/pdf',
        'fake.pdf',
      ),
    );
    expect(sniffed.status).toBe(415);
    expect(((await sniffed.json()) as { error: { message: string } }).error.message).toMatch(
      /does not look like application\/pdf/,
    );
    expect(await documentCount()).toBe(before);
    expect(filesUnder(dir).length).toBe(filesBefore);
  });

  it("unknown or another account's target → 404; bad kind → 400; missing write:documents → 403", async () => {
    const before = await documentCount();
    const missing = await upload(
      form(
        { kind: 'OTHER', attachedType: 'PORT_CALL', attachedId: '00000000-0000-4000-8000-000000000000' },
        PDF,
        'application/pdf',
      ),
    );
    expect(missing.status).toBe(404);
    const badKind = await upload(
      form({ kind: 'SELFIE', attachedType: 'PORT_CALL', attachedId: portCallId }, PDF, 'application/pdf'),
    );
    expect(badKind.status).toBe(400);
    expect(((await badKind.json()) as { error: { message: string } }).error.message).toMatch(
      /^kind: must be one of/,
    );
    const other = await upload(
      form({ kind: 'OTHER', attachedType: 'PORT_CALL', attachedId: portCallId }, PDF, 'application/pdf'),
      server.key('ANALYST'),
    );
    expect(other.status).toBe(404);
    const { secret } = await createKey(server, { scopes: 'read:documents' });
    const denied = await upload(
      form({ kind: 'OTHER', attachedType: 'PORT_CALL', attachedId: portCallId }, PDF, 'application/pdf'),
      secret,
    );
    expect(denied.status).toBe(403);
    expect(await documentCount()).toBe(before);
  });

  it('attaches to a service order and a vessel; another account cannot download (404)', async () => {
    const orderId = (await rest(server.url, '/v1/service-orders?limit=1', { key })).body.data[0].id;
    const vesselId = (await rest(server.url, '/v1/vessels/lookup?imo=9074729', { key })).body.id;
    const png = Buffer.concat([
      Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
      Buffer.alloc(64, 1),
    ]);
    const onOrder = await upload(
      form(
        { kind: 'INVOICE_COPY', attachedType: 'SERVICE_ORDER', attachedId: orderId },
        png,
        'image/png',
        'copy.png',
      ),
    );
    expect(onOrder.status).toBe(201);
    const onVessel = await upload(
      form(
        { kind: 'CERTIFICATE', attachedType: 'VESSEL', attachedId: vesselId },
        PDF,
        'application/pdf',
        'class.pdf',
      ),
    );
    expect(onVessel.status).toBe(201);
    const doc = (await onVessel.json()) as { id: string };
    const foreign = await fetch(`${server.url}/v1/documents/${doc.id}/content`, {
      headers: { 'x-api-key': server.key('ANALYST') },
    });
    expect(foreign.status).toBe(404);
  });

  it('a signed upload refuses a Content-Type other than the declared one (400), writing nothing', async () => {
    const res = await gql(
      server.url,
      'mutation($input: DocumentUploadInput!) { createDocumentUpload(input: $input) { uploadUrl } }',
      {
        key,
        variables: {
          input: {
            kind: 'OTHER',
            attachedType: 'PORT_CALL',
            attachedId: portCallId,
            fileName: 'a.pdf',
            contentType: 'application/pdf',
          },
        },
      },
    );
    const { uploadUrl } = res.body.data!.createDocumentUpload as { uploadUrl: string };
    const before = await documentCount();
    const put = await fetch(`${server.url}${uploadUrl}`, {
      method: 'PUT',
      headers: { 'content-type': 'text/plain' },
      body: 'hello',
    });
    expect(put.status).toBe(400);
    expect(await documentCount()).toBe(before);
  });
});
