import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { ManualClock } from '../../src/kernel/clock.js';
import { describeEachDialect } from '../helpers/env.js';
import { createKey, gql, rest, startTestServer, type TestServer } from '../helpers/server.js';
import { filesUnder, portOpsState } from './state.js';

const MAX = 4096;
const PDF = Buffer.concat([Buffer.from('%PDF-1.7\n'), Buffer.alloc(600, 0x41)]);

const XLSX = 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet';

/** A stored (uncompressed) ZIP with these entries: enough structure for the xlsx check. */
function zip(entries: Record<string, string>): Buffer {
  const locals: Buffer[] = [];
  const centrals: Buffer[] = [];
  let offset = 0;
  for (const [name, text] of Object.entries(entries)) {
    const nameBytes = Buffer.from(name);
    const data = Buffer.from(text);
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(20, 4);
    local.writeUInt32LE(data.length, 18);
    local.writeUInt32LE(data.length, 22);
    local.writeUInt16LE(nameBytes.length, 26);
    const central = Buffer.alloc(46);
    central.writeUInt32LE(0x02014b50, 0);
    central.writeUInt16LE(20, 4);
    central.writeUInt16LE(20, 6);
    central.writeUInt32LE(data.length, 20);
    central.writeUInt32LE(data.length, 24);
    central.writeUInt16LE(nameBytes.length, 28);
    central.writeUInt32LE(offset, 42);
    locals.push(local, nameBytes, data);
    centrals.push(central, nameBytes);
    offset += 30 + nameBytes.length + data.length;
  }
  const directory = Buffer.concat(centrals);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(Object.keys(entries).length, 8);
  end.writeUInt16LE(Object.keys(entries).length, 10);
  end.writeUInt32LE(directory.length, 12);
  end.writeUInt32LE(offset, 16);
  return Buffer.concat([...locals, directory, end]);
}

describeEachDialect('port-ops documents', (dialect) => {
  let server: TestServer;
  let key: string;
  let dir: string;
  let portCallId: string;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'tidegate-docs-'));
    // A clock that stands still keeps every request in one rate-limit window (the upload budget test).
    server = await startTestServer({
      dialect,
      clock: new ManualClock(new Date()),
      env: { DOCUMENTS_DIR: dir, DOCUMENT_MAX_BYTES: String(MAX) },
    });
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
    expect(put.status, await put.clone().text()).toBe(201);
    expect(await put.json()).toMatchObject({
      fileName: 'qty.csv',
      sizeBytes: text.length,
      uploadedBy: expect.stringMatching(/^api_key:/),
    });

    const tampered = ticket.uploadUrl.replace(/.$/, (c) => (c === 'A' ? 'B' : 'A'));
    const before = await portOpsState(server);
    const bad = await fetch(`${server.url}${tampered}`, {
      method: 'PUT',
      headers: { 'content-type': 'text/csv' },
      body: Buffer.from('quantity,unit\n900,MT\n'),
    });
    expect(bad.status).toBe(401);
    expect(((await bad.json()) as { error: { message: string } }).error.message).toBe(
      'The upload URL is invalid',
    );
    expect(await portOpsState(server)).toEqual(before);
  });

  const uploadTicket = async (fileName: string, contentType: string) => {
    const res = await gql(
      server.url,
      'mutation($input: DocumentUploadInput!) { createDocumentUpload(input: $input) { uploadUrl } }',
      {
        key,
        variables: {
          input: { kind: 'OTHER', attachedType: 'PORT_CALL', attachedId: portCallId, fileName, contentType },
        },
      },
    );
    expect(res.body.errors).toBeUndefined();
    return {
      url: `${server.url}${(res.body.data!.createDocumentUpload as { uploadUrl: string }).uploadUrl}`,
      remaining: Number(res.headers.get('x-ratelimit-remaining')),
    };
  };
  const put = (url: string, body: Buffer | string, type = 'text/plain') =>
    fetch(url, { method: 'PUT', headers: { 'content-type': type }, body });

  it('a signed upload URL works once: a replay is 409 and writes nothing, even when replays race', async () => {
    const { url } = await uploadTicket('once.txt', 'text/plain');
    expect((await put(url, 'first\n')).status).toBe(201);
    const before = await portOpsState(server);
    const replay = await put(url, 'second\n');
    expect(replay.status).toBe(409);
    expect(((await replay.json()) as { error: { message: string } }).error.message).toMatch(
      /This upload URL has already been used/,
    );
    expect(await portOpsState(server)).toEqual(before);

    const race = await uploadTicket('race.txt', 'text/plain');
    const results = await Promise.all(
      ['one\n', 'two\n', 'three\n'].map((body) => put(race.url, body).then((r) => r.status)),
    );
    expect(results.sort()).toEqual([201, 409, 409]);
    const listed = await rest(server.url, `/v1/documents?attachedId=${portCallId}&limit=100`, { key });
    expect(listed.body.data.filter((d: { fileName: string }) => d.fileName === 'race.txt')).toHaveLength(1);
    // Only the winner's content is kept; a losing upload removed what it stored.
    const everything = await rest(server.url, '/v1/documents?limit=100', { key });
    const shas = everything.body.data.map((d: { sha256: string }) => d.sha256);
    for (const entry of filesUnder(dir).filter((f) => !f.startsWith('tmp'))) {
      expect(shas).toContain(entry.split(/[/:]/)[1]);
    }
  });

  it("the PUT counts against the URL creator's port-operations rate limit", async () => {
    const { url, remaining } = await uploadTicket('budget.txt', 'text/plain');
    const res = await put(url, 'counted\n');
    expect(res.status).toBe(201);
    expect(res.headers.get('x-ratelimit-limit')).toBe(String(server.config.portOpsPerMinute));
    expect(Number(res.headers.get('x-ratelimit-remaining'))).toBe(remaining - 1);
  });

  it('downloads a file whose name is outside Latin-1 with an ASCII fallback and an RFC 8187 filename*', async () => {
    for (const name of ['Läufer€.pdf', '航海日志 "BDN".pdf']) {
      const res = await upload(
        form(
          { kind: 'OTHER', attachedType: 'PORT_CALL', attachedId: portCallId },
          PDF,
          'application/pdf',
          name,
        ),
      );
      expect(res.status).toBe(201);
      const doc = (await res.json()) as { id: string; fileName: string };
      const download = await fetch(`${server.url}/v1/documents/${doc.id}/content`, {
        headers: { 'x-api-key': key },
      });
      expect(download.status).toBe(200);
      const disposition = download.headers.get('content-disposition')!;
      const match = /^attachment; filename="([\x20-\x7e]*)"; filename\*=UTF-8''([A-Za-z0-9%!._~-]+)$/.exec(
        disposition,
      );
      expect(match, disposition).not.toBeNull();
      expect(match![1]).not.toMatch(/["\\]/);
      expect(decodeURIComponent(match![2]!)).toBe(doc.fileName);
      expect(Buffer.from(await download.arrayBuffer()).equals(PDF)).toBe(true);
    }
  });

  it('text must be UTF-8 without NUL and not HTML, XML or PDF in disguise; xlsx must be a workbook ZIP → 415, nothing written', async () => {
    const before = await portOpsState(server);
    const refused = async (bytes: Buffer | string, type: string, name: string) => {
      const res = await upload(
        form(
          { kind: 'OTHER', attachedType: 'PORT_CALL', attachedId: portCallId },
          Buffer.from(bytes),
          type,
          name,
        ),
      );
      expect(res.status, name).toBe(415);
      expect(((await res.json()) as { error: { message: string } }).error.message).toBe(
        `The content does not look like ${type} (its bytes do not match the declared type)`,
      );
    };
    await refused('<!DOCTYPE html><html><script>alert(1)</script></html>', 'text/plain', 'page.txt');
    await refused('\uFEFF  <svg onload="alert(1)">', 'text/plain', 'icon.txt');
    await refused('<?xml version="1.0"?><x/>', 'text/csv', 'data.csv');
    await refused(PDF, 'text/plain', 'doc.txt');
    await refused(
      Buffer.concat([Buffer.alloc(600, 0x41), Buffer.from([0xc3, 0x28])]),
      'text/plain',
      'late.txt',
    );
    await refused(Buffer.concat([Buffer.alloc(600, 0x41), Buffer.from([0x00])]), 'text/csv', 'nul.csv');
    await refused(zip({ 'readme.txt': 'not a workbook' }), XLSX, 'any.xlsx');
    await refused(Buffer.from('PK\x03\x04 truncated'), XLSX, 'cut.xlsx');
    expect(await portOpsState(server)).toEqual(before);

    const workbook = await upload(
      form(
        { kind: 'OTHER', attachedType: 'PORT_CALL', attachedId: portCallId },
        zip({ '[Content_Types].xml': '<Types/>', 'xl/workbook.xml': '<workbook/>' }),
        XLSX,
        'book.xlsx',
      ),
    );
    expect(workbook.status).toBe(201);
    const plain = await upload(
      form(
        { kind: 'OTHER', attachedType: 'PORT_CALL', attachedId: portCallId },
        Buffer.from('Läufer € 500 MT <b>not at the start</b>\n'),
        'text/plain',
        'note.txt',
      ),
    );
    expect(plain.status).toBe(201);
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
