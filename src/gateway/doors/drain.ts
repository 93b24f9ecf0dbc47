import type { IncomingMessage, Server, ServerResponse } from 'node:http';

/**
 * The first step of a graceful shutdown. Closing the server at once would also close every idle
 * kept-alive connection (Node does that in `server.close()`), and a client that sends its next
 * request on one of them just then gets ECONNRESET. Instead, for `drainMs` the server keeps
 * answering — readiness already says 503, so load balancers stop sending — and every response
 * carries `Connection: close`, which tells each client to reconnect (elsewhere) after it. Only
 * connections that stayed idle through the whole window are then closed by the server.
 *
 * The listener is added only when draining starts: normal requests pay nothing for it.
 */
export async function drainConnections(server: Server, drainMs: number): Promise<void> {
  const closeAfterResponse = (_request: IncomingMessage, response: ServerResponse) => {
    if (!response.headersSent) response.setHeader('Connection', 'close');
  };
  server.prependListener('request', closeAfterResponse);
  await new Promise((resolve) => setTimeout(resolve, drainMs));
}
