import { createServer, type AddressInfo } from 'node:net';
import { expect, it } from 'vitest';
import { startTestServer } from './server.js';

/*
 * startAuthServer (test/auth/helpers.ts) chooses its PORT before the start and tries again on
 * EADDRINUSE: the failed start must close what it opened and still say EADDRINUSE, not an error of
 * its clean-up.
 */
it('a test server whose chosen PORT is taken fails with EADDRINUSE after closing what it opened', async () => {
  const taken = createServer();
  await new Promise<void>((r) => taken.listen(0, '127.0.0.1', r));
  const { port } = taken.address() as AddressInfo;
  try {
    await expect(startTestServer({ env: { PORT: String(port) } })).rejects.toThrow(/EADDRINUSE/);
    // The port is still the other server's, and a server on a free port starts as usual.
    const server = await startTestServer();
    await server.close();
  } finally {
    await new Promise((r) => taken.close(r));
  }
});
