import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createClient, type Client } from 'graphql-ws';
import WebSocket from 'ws';
import type { DomainEvent } from '../../src/kernel/events.js';
import { stageEvents, type EventDraft } from '../../src/events/stage.js';
import type { TestServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';

export interface Received {
  at: number;
  headers: IncomingHttpHeaders;
  body: string;
  json: { id: string; type: string; created_at: string; data: Record<string, unknown> };
}

/** A real HTTP server on 127.0.0.1 standing in for a customer's webhook receiver. */
export interface Receiver {
  url: string;
  received: Received[];
  /** Decides each answer; default 200. Return 'hang' to never answer. */
  respond: (request: Received, res: ServerResponse) => number | 'hang';
  waitFor(predicate: (all: Received[]) => boolean, timeoutMs?: number): Promise<Received[]>;
  close(): Promise<void>;
}

export async function startReceiver(): Promise<Receiver> {
  const received: Received[] = [];
  const hanging = new Set<ServerResponse>();
  const receiver: Receiver = {
    url: '',
    received,
    respond: () => 200,
    async waitFor(predicate, timeoutMs = 15_000) {
      await eventually(
        () => predicate(received),
        () => `receiver: condition not met; got ${received.length} requests`,
        timeoutMs,
      );
      return received;
    },
    async close() {
      for (const res of hanging) res.destroy();
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const entry: Received = { at: Date.now(), headers: req.headers, body, json: JSON.parse(body) };
      received.push(entry);
      const status = receiver.respond(entry, res);
      if (status === 'hang') {
        hanging.add(res);
        return;
      }
      res.writeHead(status).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  receiver.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`;
  return receiver;
}

/** Commits events the way a domain does (same transaction as the change) and publishes them after commit. */
export async function commitEvents(server: TestServer, drafts: EventDraft[]): Promise<DomainEvent[]> {
  const em = server.database.db.em();
  const events = await em.transactional(async (tx) => stageEvents(tx, server.app.services, drafts));
  await server.app.services.events.publish(events);
  return events;
}

export function tierChange(slug: string, tier = 'L2'): EventDraft {
  return {
    type: 'tier_change',
    payload: {
      slug,
      protocolId: `p-${slug}`,
      previousTier: 'L1',
      tier,
      score: 71.5,
      asOf: '2026-01-01T00:00:00.000Z',
    },
  };
}

export function scoreChange(slug: string, delta: number): EventDraft {
  return {
    type: 'score_change',
    payload: {
      slug,
      protocolId: `p-${slug}`,
      previousScore: 70,
      score: 70 + delta,
      delta,
      auditId: `a-${slug}`,
      asOf: '2026-01-01T00:00:00.000Z',
    },
  };
}

export interface WsSession {
  client: Client;
  /** Close code and reason once the socket closed. */
  closed: Promise<{ code: number; reason: string }>;
  /** Starts a subscription; collects data and errors. */
  subscribe(query: string, variables?: Record<string, unknown>): Subscription;
  dispose(): Promise<void>;
}

export interface Subscription {
  data: Array<Record<string, unknown>>;
  errors: unknown[];
  completed: boolean;
  /** Resolves once the server acknowledged the start (first ping round trip after subscribe). */
  waitFor(predicate: (s: Subscription) => boolean, timeoutMs?: number): Promise<void>;
}

export function wsSession(baseUrl: string, connectionParams: Record<string, unknown>): WsSession {
  let resolveClosed!: (v: { code: number; reason: string }) => void;
  const closed = new Promise<{ code: number; reason: string }>((r) => (resolveClosed = r));
  const client = createClient({
    url: baseUrl.replace(/^http/, 'ws') + '/graphql',
    webSocketImpl: WebSocket,
    connectionParams,
    retryAttempts: 0,
    lazy: false,
    // The close is asserted through `closed`; without this the client also logs it.
    onNonLazyError: () => {},
    on: {
      closed: (e) =>
        resolveClosed({
          code: (e as { code: number }).code,
          reason: String((e as { reason?: string }).reason ?? ''),
        }),
    },
  });
  return {
    client,
    closed,
    subscribe(query, variables) {
      const sub: Subscription = {
        data: [],
        errors: [],
        completed: false,
        waitFor(predicate, timeoutMs = 10_000) {
          return eventually(
            () => predicate(sub),
            () => `subscription: condition not met (${JSON.stringify(sub)})`,
            timeoutMs,
          );
        },
      };
      client.subscribe(
        { query, variables },
        {
          next: (value) => {
            if (value.errors) sub.errors.push(...value.errors);
            if (value.data) sub.data.push(value.data as Record<string, unknown>);
          },
          error: (e) => sub.errors.push(e),
          complete: () => (sub.completed = true),
        },
      );
      return sub;
    },
    async dispose() {
      await client.dispose();
    },
  };
}

/** Waits, polling every 10 ms, until `condition` holds; past `timeoutMs` fails saying what was awaited. */
export async function eventually(
  condition: () => boolean,
  what: string | (() => string),
  timeoutMs = 10_000,
): Promise<void> {
  await waitFor(condition, Boolean, {
    what: typeof what === 'string' ? what : () => what(),
    timeoutMs,
    intervalMs: 10,
  });
}

/** Waits until subscriptions are live (checked by `check`), naming their errors if they never start. */
export function untilListening(
  check: () => boolean,
  timeoutMs = 5_000,
  ...subs: Subscription[]
): Promise<void> {
  return eventually(
    check,
    () => `subscriptions did not start: ${JSON.stringify(subs.map((s) => s.errors))}`,
    timeoutMs,
  );
}
