import { createClient, type Client } from 'graphql-ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { AuditRecord } from '../../src/audit/entities.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

/** Opens a raw graphql-ws socket, sends connection_init and resolves with the close code (or 'ack'). */
function handshake(url: string, payload: unknown): Promise<number | 'ack'> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, 'graphql-transport-ws');
    ws.on('open', () => ws.send(JSON.stringify({ type: 'connection_init', payload })));
    ws.on('message', (data) => {
      if (JSON.parse(String(data)).type === 'connection_ack') {
        resolve('ack');
        ws.close();
      }
    });
    ws.on('close', (code) => resolve(code));
    ws.on('error', reject);
  });
}

describe('graphql-ws on /graphql', () => {
  let server: TestServer;
  let wsUrl: string;
  beforeAll(async () => {
    server = await startTestServer();
    wsUrl = server.url.replace('http', 'ws') + '/graphql';
  });
  afterAll(() => server?.close());

  it('accepts an API key as apiKey or as a Bearer authorization in connection_init', async () => {
    expect(await handshake(wsUrl, { apiKey: server.key('ANALYST') })).toBe('ack');
    expect(await handshake(wsUrl, { authorization: `Bearer ${server.key('ANALYST')}` })).toBe('ack');
  });

  it('closes with 4401 without a valid credential', async () => {
    expect(await handshake(wsUrl, {})).toBe(4401);
    expect(await handshake(wsUrl, { apiKey: 'tg_wrong' })).toBe(4401);
    expect(await handshake(wsUrl, { authorization: 'Basic x' })).toBe(4401);
  });

  it('runs operations through the same access check', async () => {
    const client: Client = createClient({
      url: wsUrl,
      webSocketImpl: WebSocket,
      connectionParams: { apiKey: server.key('ANALYST') },
      retryAttempts: 0,
    });
    const run = (query: string) =>
      new Promise<unknown>((resolve, reject) => {
        let result: unknown;
        client.subscribe(
          { query },
          { next: (v) => (result = v), error: reject, complete: () => resolve(result) },
        );
      });
    expect(await run('query WsLookup { vessel(imo: "9074729") { name } }')).toEqual({
      data: { vessel: { name: 'Northern Tern' } },
    });
    await server.app.services.audit.flush();
    const audited = await server.database.db.em().find(AuditRecord, { operation: 'ws query WsLookup' });
    expect(audited).toHaveLength(1);
    expect(audited[0]).toMatchObject({ status: 200, credentialKind: 'api_key' });
    await expect(run('{ auditLog { totalCount } }')).rejects.toEqual([
      expect.objectContaining({
        message: 'Missing required scope: admin',
        extensions: expect.objectContaining({ code: 'FORBIDDEN' }),
      }),
    ]);
    await client.dispose();
  });

  it('refuses upgrades on other paths', async () => {
    const code = await new Promise((resolve) => {
      const ws = new WebSocket(server.url.replace('http', 'ws') + '/elsewhere', 'graphql-transport-ws');
      ws.on('error', () => resolve('refused'));
      ws.on('close', (c) => resolve(c));
    });
    expect(code).toBe('refused');
  });
});
