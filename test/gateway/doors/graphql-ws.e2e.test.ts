import { createClient, type Client } from 'graphql-ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { AuditRecord } from '../../../src/audit/entities.js';
import { ManualClock } from '../../../src/kernel/clock.js';
import { commitEvents, eventually, tierChange, untilListening } from '../../events/helpers.js';
import { describeWithPostgres } from '../../helpers/env.js';
import { createKey, gql, startTestServer, type TestServer } from '../../helpers/server.js';

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

interface Message {
  id?: string;
  type: string;
  payload?: unknown;
}

/** An acknowledged graphql-transport-ws socket that keeps every message and WebSocket ping it receives. */
interface RawSocket {
  messages: Message[];
  pings: number;
  send(message: Message): void;
  until(condition: () => boolean, what: string, timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

async function openSocket(
  url: string,
  payload: Record<string, unknown>,
  headers: Record<string, string> = {},
): Promise<RawSocket> {
  const ws = new WebSocket(url, 'graphql-transport-ws', { headers });
  const socket: RawSocket = {
    messages: [],
    pings: 0,
    send: (message) => ws.send(JSON.stringify(message)),
    until: (condition, what, timeoutMs) =>
      eventually(condition, () => `${what} (got ${JSON.stringify(socket.messages)})`, timeoutMs),
    close: () =>
      new Promise((resolve) => {
        if (ws.readyState === WebSocket.CLOSED) return resolve();
        ws.once('close', () => resolve());
        ws.close();
      }),
  };
  ws.on('message', (data) => socket.messages.push(JSON.parse(String(data)) as Message));
  ws.on('ping', () => socket.pings++);
  await new Promise<void>((resolve, reject) => {
    ws.once('error', reject);
    ws.once('close', (code) => reject(new Error(`closed with ${code} before connection_ack`)));
    ws.once('open', () => socket.send({ type: 'connection_init', payload }));
    ws.on('message', () => {
      if (socket.messages.some((m) => m.type === 'connection_ack')) resolve();
    });
  });
  return socket;
}

const errorsOf = (socket: RawSocket) => socket.messages.filter((m) => m.type === 'error');
const nextIds = (socket: RawSocket) =>
  new Set(socket.messages.filter((m) => m.type === 'next').map((m) => m.id));

async function auditOf(server: TestServer, requestId: string): Promise<AuditRecord[]> {
  await server.app.services.audit.flush();
  return server.database.db.em().find(AuditRecord, { requestId }, { orderBy: { id: 'asc' } });
}

let requestCounter = 0;
const freshRequestId = () => `ws-test-${process.pid}-${++requestCounter}`;

describe('graphql-ws on /graphql', () => {
  const CAP = 3;
  let server: TestServer;
  let wsUrl: string;
  const listeners = () => server.app.services.bus.listenerCount;
  beforeAll(async () => {
    server = await startTestServer({
      env: { WS_MAX_SUBSCRIPTIONS_PER_CONNECTION: String(CAP), WS_KEEPALIVE: '1s' },
    });
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
    expect(await run('query WsLookup { vessel(imo: "9074729") { name } }')).toMatchObject({
      data: { vessel: { name: 'Northern Tern' } },
      extensions: { cost: { requested: expect.any(Number) } },
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

  it('admits exactly WS_MAX_SUBSCRIPTIONS_PER_CONNECTION of many simultaneous subscribes on one connection', async () => {
    const socket = await openSocket(wsUrl, { apiKey: server.key('INSTITUTIONAL') });
    const before = listeners();
    // All ten frames leave in one turn, so the server handles them concurrently.
    for (let i = 0; i < 10; i++)
      socket.send({
        id: `s${i}`,
        type: 'subscribe',
        payload: { query: 'subscription { tierChanged { eventId } }' },
      });
    await socket.until(() => errorsOf(socket).length === 10 - CAP, `${10 - CAP} refusals`);
    for (const error of errorsOf(socket)) {
      expect(error.payload).toEqual([
        expect.objectContaining({
          message: `At most ${CAP} subscriptions per connection`,
          extensions: expect.objectContaining({ code: 'RATE_LIMIT_EXCEEDED' }),
        }),
      ]);
    }
    await untilListening(() => listeners() === before + CAP);
    await commitEvents(server, [tierChange('cap')]);
    await socket.until(() => nextIds(socket).size === CAP, `an event on ${CAP} subscriptions`);
    expect(errorsOf(socket)).toHaveLength(10 - CAP);

    // Completing one frees its slot for the next subscribe.
    const admitted = [...nextIds(socket)];
    socket.send({ id: admitted[0], type: 'complete' });
    await untilListening(() => listeners() === before + CAP - 1);
    socket.send({
      id: 'again',
      type: 'subscribe',
      payload: { query: 'subscription { tierChanged { eventId } }' },
    });
    await untilListening(() => listeners() === before + CAP);
    expect(errorsOf(socket)).toHaveLength(10 - CAP);
    await socket.close();
    await untilListening(() => listeners() === before);
  });

  it('delivers one frame per subscription, each with its own id, from one shared answer', async () => {
    const socket = await openSocket(wsUrl, { apiKey: server.key('INSTITUTIONAL') });
    const before = listeners();
    for (const id of ['a', 'b'])
      socket.send({
        id,
        type: 'subscribe',
        payload: { query: 'subscription { tierChanged { slug tier } }' },
      });
    await untilListening(() => listeners() === before + 2);
    await commitEvents(server, [tierChange('shared-answer', 'L3')]);
    await socket.until(() => nextIds(socket).size === 2, 'one frame per subscription');
    const frames = socket.messages.filter((m) => m.type === 'next');
    expect(frames).toEqual([
      { id: 'a', type: 'next', payload: { data: { tierChanged: { slug: 'shared-answer', tier: 'L3' } } } },
      { id: 'b', type: 'next', payload: { data: { tierChanged: { slug: 'shared-answer', tier: 'L3' } } } },
    ]);
    await socket.close();
    await untilListening(() => listeners() === before);
  });

  it('pings every WS_KEEPALIVE', async () => {
    const socket = await openSocket(wsUrl, { apiKey: server.key('ANALYST') });
    await socket.until(() => socket.pings >= 2, 'two keep-alive pings');
    await socket.close();
  });

  it('audits subscription starts: refused ones with their status, bad documents with 400', async () => {
    const requestId = freshRequestId();
    const socket = await openSocket(
      wsUrl,
      { apiKey: server.key('ANALYST') },
      { 'x-request-id': requestId, 'x-forwarded-for': '203.0.113.7', 'user-agent': 'ws-audit-test' },
    );
    const before = listeners();
    socket.send({
      id: 'ok',
      type: 'subscribe',
      payload: { query: 'subscription Feed { tierChanged { eventId } }' },
    });
    await untilListening(() => listeners() === before + 1);
    const bad = 'subscription Moves { scoreChanged(minDelta: -1) { eventId } }';
    socket.send({ id: 'arg', type: 'subscribe', payload: { query: bad } });
    socket.send({ id: 'syntax', type: 'subscribe', payload: { query: 'subscription {' } });
    socket.send({ id: 'unknown', type: 'subscribe', payload: { query: 'subscription { nope }' } });
    socket.send({
      id: 'plan',
      type: 'subscribe',
      payload: { query: 'subscription Risk { complianceAlerts { eventId } }' },
    });
    const refused = ['arg', 'syntax', 'unknown', 'plan'];
    await socket.until(
      () => refused.every((id) => socket.messages.some((m) => m.id === id && /error|complete/.test(m.type))),
      'four refusals',
    );
    const refusal = (id: string) => JSON.stringify(socket.messages.filter((m) => m.id === id));
    expect(refusal('arg')).toMatch(/BAD_USER_INPUT/);
    expect(refusal('plan')).toMatch(/PLAN_REQUIRED/);

    const rows = await auditOf(server, requestId);
    const byOperation = rows.map((r) => [r.operation, r.status]).sort();
    expect(byOperation).toEqual(
      [
        ['ws graphql', 400],
        ['ws graphql', 400],
        ['ws subscription Feed', 200],
        ['ws subscription Moves', 400],
        ['ws subscription Risk', 402],
      ].sort(),
    );
    // TRUST_PROXY is unset: the forwarded address is ignored, exactly as on HTTP.
    const http = await gql(server.url, '{ __typename }', {
      key: server.key('ANALYST'),
      headers: { 'x-request-id': `${requestId}-http`, 'x-forwarded-for': '203.0.113.7' },
    });
    expect(http.status).toBe(200);
    const [httpRow] = await auditOf(server, `${requestId}-http`);
    for (const row of rows) expect(row).toMatchObject({ ip: httpRow!.ip, userAgent: 'ws-audit-test' });
    expect(httpRow!.ip).not.toBe('203.0.113.7');
    await socket.close();
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

describe('graphql-ws behind a trusted proxy, on an injected clock', () => {
  const clock = new ManualClock('2026-03-04T05:06:07.000Z');
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ clock, env: { TRUST_PROXY: 'loopback' } });
  });
  afterAll(() => server?.close());

  it('audits a subscription start with the forwarded client address and the clock time, as HTTP does', async () => {
    const requestId = freshRequestId();
    const headers = { 'x-request-id': requestId, 'x-forwarded-for': '198.51.100.23, 127.0.0.1' };
    const before = server.app.services.bus.listenerCount;
    const socket = await openSocket(
      server.url.replace('http', 'ws') + '/graphql',
      { apiKey: server.key('ANALYST') },
      headers,
    );
    socket.send({
      id: '1',
      type: 'subscribe',
      payload: { query: 'subscription Feed { tierChanged { eventId } }' },
    });
    await untilListening(() => server.app.services.bus.listenerCount === before + 1);
    const rows = await auditOf(server, requestId);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ operation: 'ws subscription Feed', status: 200, ip: '198.51.100.23' });
    expect(rows[0]!.at.toISOString()).toBe('2026-03-04T05:06:07.000Z');

    const http = await gql(server.url, '{ __typename }', {
      key: server.key('ANALYST'),
      headers: { ...headers, 'x-request-id': `${requestId}-http` },
    });
    expect(http.status).toBe(200);
    const [httpRow] = await auditOf(server, `${requestId}-http`);
    expect(httpRow!.ip).toBe(rows[0]!.ip);
    expect(httpRow!.at.toISOString()).toBe('2026-03-04T05:06:07.000Z');
    await socket.close();
  });
});

describeWithPostgres('graphql-ws connection bookkeeping [postgresql]', () => {
  let server: TestServer;
  let wsUrl: string;
  beforeAll(async () => {
    server = await startTestServer({ dialect: 'postgresql' });
    wsUrl = server.url.replace('http', 'ws') + '/graphql';
  });
  afterAll(() => server?.close());

  /** Sends connection_init and leaves at once, while the server is still looking the credential up. */
  const initAndLeave = (apiKey: string) =>
    new Promise<void>((resolve, reject) => {
      const ws = new WebSocket(wsUrl, 'graphql-transport-ws');
      ws.on('open', () => {
        ws.send(JSON.stringify({ type: 'connection_init', payload: { apiKey } }));
        ws.close();
      });
      ws.on('close', () => resolve());
      ws.on('error', reject);
    });

  it('forgets clients that leave while their credential is being checked', async () => {
    // Fresh keys are not in the credential cache: each check reads api_keys.
    const keys = await Promise.all(Array.from({ length: 30 }, () => createKey(server, { plan: 'ANALYST' })));
    // Hold the checks until every client has gone, as a slow database would.
    await server.database.db.em().transactional(async (tx) => {
      await tx.execute('LOCK TABLE api_keys IN ACCESS EXCLUSIVE MODE');
      await Promise.all(keys.map((k) => initAndLeave(k.secret)));
      // One more round trip to the server, which has then handled the sockets' closing too.
      expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
    });
    // A last client's check is issued after the others', so theirs are done once it is acknowledged.
    const last = await openSocket(wsUrl, { apiKey: (await createKey(server, { plan: 'ANALYST' })).secret });
    expect(server.app.ws.connectionCount).toBeGreaterThanOrEqual(1);
    await last.close();
    await eventually(() => server.app.ws.connectionCount === 0, 'every connection forgotten');
  });
});

describe('a subscriber that falls behind', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ env: { WS_MAX_BACKLOG_EVENTS: '20' } });
  });
  afterAll(() => server?.close());

  it('gets a final error and its subscription ends, instead of the server buffering without bound', async () => {
    const bus = server.app.services.bus;
    const wsUrl = server.url.replace('http', 'ws') + '/graphql';
    const socket = await openSocket(wsUrl, { apiKey: server.key('INSTITUTIONAL') });
    const before = bus.listenerCount;
    socket.send({
      id: 'slow',
      type: 'subscribe',
      payload: { query: 'subscription { tierChanged { slug tier } }' },
    });
    await untilListening(() => bus.listenerCount === before + 1);
    // One burst, published within one turn: the events pile up faster than the socket is written, past 20.
    await commitEvents(
      server,
      Array.from({ length: 200 }, (_, i) => tierChange(`burst-${i}`)),
    );
    await socket.until(() => socket.messages.some((m) => m.type === 'complete'), 'the subscription to end');
    const frames = socket.messages.filter((m) => m.id === 'slow');
    const last = frames.at(-2)!;
    expect(last.type).toBe('next');
    expect(last.payload).toEqual({
      errors: [
        expect.objectContaining({
          message: 'Subscriber fell too far behind; subscription ended',
          extensions: expect.objectContaining({ code: 'SERVICE_UNAVAILABLE' }),
        }),
      ],
    });
    // Some events made it, not all 200.
    const delivered = frames.filter((m) => m.type === 'next').length - 1;
    expect(delivered).toBeGreaterThan(0);
    expect(delivered).toBeLessThan(200);
    await untilListening(() => bus.listenerCount === before);
    await socket.close();
  });
});
