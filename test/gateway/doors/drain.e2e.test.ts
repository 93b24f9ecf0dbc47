import { connect, type Socket } from 'node:net';
import { describe, expect, it } from 'vitest';
import { startTestServer } from '../../helpers/server.js';

/** A raw TCP connection to the server; `ended` settles when the server ends or drops it. */
async function openConnection(url: string): Promise<{ socket: Socket; ended: Promise<void> }> {
  const { hostname, port } = new URL(url);
  const socket = connect(Number(port), hostname);
  await new Promise((resolve) => socket.once('connect', resolve));
  const ended = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  return { socket, ended };
}

describe('graceful shutdown of HTTP connections', () => {
  it('ends a connection that never sent a byte without waiting for the hard deadline', async () => {
    const server = await startTestServer({ env: { SHUTDOWN_DRAIN_MS: '50' } });
    const silent = await openConnection(server.url);
    // The last resort (after the hard deadline) closes every connection at once; a graceful
    // shutdown must not need it for a connection that holds no request.
    let forced = false;
    const closeAll = server.app.fastify.server.closeAllConnections.bind(server.app.fastify.server);
    server.app.fastify.server.closeAllConnections = () => {
      forced = true;
      closeAll();
    };
    try {
      await server.close();
      await silent.ended;
      expect(forced).toBe(false);
      expect(silent.socket.bytesRead).toBe(0);
    } finally {
      silent.socket.destroy();
    }
  });

  it('still answers a request whose bytes arrive during the drain window', async () => {
    const server = await startTestServer({ env: { SHUTDOWN_DRAIN_MS: '300' } });
    const conn = await openConnection(server.url);
    let response = '';
    conn.socket.on('data', (d) => (response += d));
    const closing = server.close();
    conn.socket.write(`GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n`);
    await closing;
    await conn.ended;
    expect(response).toMatch(/^HTTP\/1.1 200/);
    expect(response).toMatch(/connection: close/i);
  });
});
