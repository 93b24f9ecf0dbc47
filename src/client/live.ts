import { TidegateError } from './errors.js';

/**
 * An event handler property, checked bivariantly (method syntax): implementations type their events
 * more precisely (`ws` has its own Event, MessageEvent and CloseEvent classes), and the client reads
 * only the fields named here.
 */
type Handler<E> = { handle(event: E): void }['handle'] | null;

/** The part of the WebSocket API the client uses: the browser's, Node 22's, or the `ws` package's. */
export interface WebSocketLike {
  readonly readyState: number;
  send(data: string): void;
  close(code?: number, reason?: string): void;
  onopen: Handler<unknown>;
  onmessage: Handler<{ data: unknown }>;
  onclose: Handler<{ code: number; reason: string }>;
  onerror: Handler<unknown>;
}
export type WebSocketConstructor = new (url: string, protocols?: string | string[]) => WebSocketLike;

export interface Sink<T> {
  next(value: T): void;
  error(error: TidegateError): void;
  complete(): void;
}

interface Message {
  type: string;
  id?: string;
  payload?: unknown;
}

/** Close codes the server uses (4401: no or bad credential; 4403: revoked, expired, refresh refused). */
const CLOSE_CODES: Record<number, string> = { 4401: 'UNAUTHENTICATED', 4403: 'FORBIDDEN' };

/**
 * One graphql-transport-ws connection carrying every subscription of a client. It opens on the
 * first subscription and closes after the last. `renew` hands the server a fresh credential in
 * band (`ping` with `{"refresh": …}`; the server's `pong` is the ack): subscriptions are not
 * restarted, so no event is missed across a token refresh.
 */
export class LiveConnection {
  private socket: WebSocketLike | undefined;
  private acknowledged: Promise<void> | undefined;
  private readonly sinks = new Map<string, Sink<unknown>>();
  private nextId = 1;
  /** Resolves the `renew` waiting for its pong (one at a time: renewals are chained). */
  private pongWaiter: (() => void) | undefined;
  private renewal: Promise<void> = Promise.resolve();
  /** Rejects the `renew` waiting for its pong when the connection closes instead. */
  private closedWaiter: ((error: TidegateError) => void) | undefined;

  constructor(
    private readonly url: string,
    private readonly WebSocketImpl: WebSocketConstructor,
    /** The connection_init payload, read when the connection opens (the current credential). */
    private readonly initPayload: () => Promise<Record<string, unknown>>,
  ) {}

  get open(): boolean {
    return this.socket !== undefined;
  }

  subscribe<T>(query: string, variables: Record<string, unknown> | undefined, sink: Sink<T>): () => void {
    const id = String(this.nextId++);
    this.sinks.set(id, sink as Sink<unknown>);
    const ready = this.connect();
    void ready.then(
      () => {
        if (this.sinks.has(id)) this.send({ id, type: 'subscribe', payload: { query, variables } });
      },
      () => undefined, // the close handler has told every sink
    );
    return () => {
      if (!this.sinks.delete(id)) return;
      void ready.then(
        () => this.send({ id, type: 'complete' }),
        () => undefined,
      );
      if (this.sinks.size === 0) this.close();
    };
  }

  /**
   * Replaces the connection's credential without reconnecting. Resolves on the server's pong; a
   * refusal closes the connection (4403) and every subscription gets the error.
   */
  renew(credential: string): Promise<void> {
    const acknowledged = this.acknowledged;
    if (!acknowledged) return Promise.resolve(); // not connected: the next connection uses the new credential
    const next = this.renewal.then(async () => {
      await acknowledged;
      if (this.acknowledged !== acknowledged) return; // reconnected since: it opened with a newer credential
      await new Promise<void>((resolve, reject) => {
        this.pongWaiter = resolve;
        this.closedWaiter = reject;
        this.send({ type: 'ping', payload: { refresh: credential } });
      });
    });
    this.renewal = next.catch(() => undefined);
    return next;
  }

  close(): void {
    const socket = this.socket;
    this.reset();
    socket?.close(1000, 'Normal Closure');
  }

  private connect(): Promise<void> {
    if (this.acknowledged) return this.acknowledged;
    const acknowledged = new Promise<void>((resolve, reject) => {
      let socket: WebSocketLike;
      try {
        socket = new this.WebSocketImpl(this.url, 'graphql-transport-ws');
      } catch (e) {
        // A malformed URL, or a page forbidden to open sockets: no close event will follow.
        const error = new TidegateError('CONNECTION_FAILED', (e as Error).message);
        queueMicrotask(() => this.fail(error));
        reject(error);
        return;
      }
      this.socket = socket;
      socket.onopen = () => {
        this.initPayload().then(
          (payload) => this.send({ type: 'connection_init', payload }),
          // No credential (signed out, session expired): reported to the subscriptions as 4401.
          (e: unknown) => socket.close(4401, e instanceof Error ? e.message.slice(0, 100) : 'No credential'),
        );
      };
      socket.onmessage = (event) => {
        const message = JSON.parse(String(event.data)) as Message;
        if (message.type === 'connection_ack') resolve();
        else this.receive(message);
      };
      socket.onerror = () => undefined; // onclose follows with the code
      socket.onclose = ({ code, reason }) => {
        if (this.socket !== socket) return;
        const error = new TidegateError(
          CLOSE_CODES[code] ?? 'CONNECTION_CLOSED',
          `The live connection closed (${code}${reason ? ` ${reason}` : ''})`,
          { details: { closeCode: code, reason } },
        );
        reject(error);
        this.fail(error);
      };
    });
    acknowledged.catch(() => undefined);
    this.acknowledged = acknowledged;
    return acknowledged;
  }

  private receive(message: Message): void {
    const sink = message.id === undefined ? undefined : this.sinks.get(message.id);
    switch (message.type) {
      case 'ping':
        this.send({ type: 'pong' });
        return;
      case 'pong': {
        const waiter = this.pongWaiter;
        this.pongWaiter = this.closedWaiter = undefined;
        waiter?.();
        return;
      }
      case 'next':
        sink?.next(message.payload);
        return;
      case 'error': {
        this.sinks.delete(message.id!);
        const errors = message.payload as Array<{ message: string; extensions?: Record<string, unknown> }>;
        const first = errors[0];
        const code = first?.extensions?.code;
        sink?.error(
          new TidegateError(
            typeof code === 'string' ? code : 'GRAPHQL_ERROR',
            first?.message ?? 'Subscription refused',
            {
              details: { errors },
            },
          ),
        );
        if (this.sinks.size === 0) this.close();
        return;
      }
      case 'complete':
        this.sinks.delete(message.id!);
        sink?.complete();
        if (this.sinks.size === 0) this.close();
        return;
    }
  }

  /** The connection is gone: every subscription and a waiting renewal get the error. */
  private fail(error: TidegateError): void {
    const sinks = [...this.sinks.values()];
    this.closedWaiter?.(error);
    this.reset();
    for (const sink of sinks) sink.error(error);
  }

  private send(message: Message): void {
    // 1 = OPEN in every WebSocket implementation.
    if (this.socket?.readyState === 1) this.socket.send(JSON.stringify(message));
  }

  private reset(): void {
    this.socket = undefined;
    this.acknowledged = undefined;
    this.sinks.clear();
    this.pongWaiter = this.closedWaiter = undefined;
  }
}
