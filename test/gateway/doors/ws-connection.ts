import WebSocket from 'ws';
import { eventually } from '../../events/helpers.js';
import type { Json } from '../../helpers/server.js';

/** A raw graphql-transport-ws connection: every message kept, the close code when it closes. */
export class Connection {
  readonly messages: Json[] = [];
  closed?: { code: number; reason: string };
  private constructor(private readonly socket: WebSocket) {
    socket.on('message', (data) => this.messages.push(JSON.parse(String(data))));
    socket.on('close', (code, reason) => (this.closed = { code, reason: String(reason) }));
  }

  /** Opens and initialises a connection with an API key; resolves once it is acknowledged. */
  static async open(url: string, apiKey: string, headers?: Record<string, string>): Promise<Connection> {
    const connection = await Connection.socket(url, headers);
    connection.send({ type: 'connection_init', payload: { apiKey } });
    await connection.until(
      () => connection.messages.some((m) => m.type === 'connection_ack') || connection.closed !== undefined,
      'the ack',
    );
    return connection;
  }

  /** Opens a socket and sends nothing yet. */
  static async socket(url: string, headers?: Record<string, string>): Promise<Connection> {
    const socket = new WebSocket(url.replace('http', 'ws') + '/graphql', 'graphql-transport-ws', { headers });
    const connection = new Connection(socket);
    await new Promise((resolve) => socket.once('open', resolve));
    return connection;
  }

  /** Runs a query or mutation over the socket; resolves with its `next` payload (or its `error`). */
  async execute(id: string, query: string): Promise<Json> {
    this.send({ type: 'subscribe', id, payload: { query } });
    await this.until(
      () => this.messages.some((m) => m.id === id && (m.type === 'next' || m.type === 'error')),
      `an answer to ${id}`,
    );
    const answer = this.messages.find((m) => m.id === id && (m.type === 'next' || m.type === 'error'));
    return answer.type === 'error' ? { errors: answer.payload } : answer.payload;
  }

  /** A keep-alive ping round trip: every message sent before it has been handled. */
  async roundTrip(): Promise<void> {
    const pongs = this.count('pong');
    this.send({ type: 'ping' });
    await this.until(() => this.count('pong') > pongs, 'a pong');
  }

  send(message: Json): void {
    this.socket.send(JSON.stringify(message));
  }

  count(type: string): number {
    return this.messages.filter((m) => m.type === type).length;
  }

  /** Sends the refresh ping; resolves with 'pong' when acknowledged, or the close code. */
  async refresh(secret: unknown): Promise<'pong' | number> {
    const pongs = this.count('pong');
    this.send({ type: 'ping', payload: { refresh: secret } });
    await this.until(() => this.count('pong') > pongs || this.closed !== undefined, 'a pong or a close');
    return this.closed ? this.closed.code : 'pong';
  }

  until(condition: () => boolean, what: string): Promise<void> {
    return eventually(condition, () => `${what} (got ${JSON.stringify(this.messages)})`, 10_000);
  }

  close(): void {
    this.socket.close();
  }
}
