import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

/**
 * The first step of a graceful shutdown, for one HTTP server. `watch` it when the server is built;
 * `drain` it when the shutdown starts.
 */
export class ConnectionDrain {
  /** Every open connection: one Set entry per connection, nothing per request. */
  private readonly open = new Set<Socket>();

  constructor(private readonly server: Server) {
    server.on('connection', (socket: Socket) => {
      this.open.add(socket);
      socket.once('close', () => this.open.delete(socket));
    });
  }

  /**
   * Closing the server at once would also close every idle kept-alive connection (Node does that
   * in `server.close()`), and a client that sends its next request on one of them just then gets
   * ECONNRESET. Instead, for `drainMs` the server keeps answering — readiness already says 503, so
   * load balancers stop sending — and every response carries `Connection: close`, which tells each
   * client to reconnect (elsewhere) after it. Only connections that stayed idle through the whole
   * window are then closed by the server.
   *
   * A connection that has not sent a single byte (a browser's or a proxy's preconnect, a TCP
   * probe) is ended at the end of the window too: Node counts it neither as idle nor as busy, so
   * `server.close()` would otherwise wait for it until the hard deadline.
   *
   * The response listener is added only when draining starts: normal requests pay nothing for it.
   */
  async drain(drainMs: number): Promise<void> {
    const closeAfterResponse = (_request: IncomingMessage, response: ServerResponse) => {
      if (!response.headersSent) response.setHeader('Connection', 'close');
    };
    this.server.prependListener('request', closeAfterResponse);
    await new Promise((resolve) => setTimeout(resolve, drainMs));
    for (const socket of this.open) if (socket.bytesRead === 0) socket.end();
  }
}
