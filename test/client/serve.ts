/**
 * Starts the real test server with the demo data for the Python client's tests and prints one
 * JSON line: its URL and demo credentials (an analyst user, a public and a confidential OAuth
 * client, API keys). Runs until stdin closes or SIGTERM. Extra environment (e.g. a plan's rate
 * limit) is passed through as the operator would set it.
 *   node --import tsx test/client/serve.ts
 */
import { PASSWORD } from '../auth/helpers.js';
import { startClientServer } from './helpers.js';

const passThrough = Object.fromEntries(
  Object.entries(process.env).filter(([name]) => /^(LIMIT_|PORT_OPS_PER_MINUTE$|CORS_ORIGINS$)/.test(name)),
) as Record<string, string>;
const { server, user, publicClient, confidential } = await startClientServer({ env: passThrough });
process.stdout.write(
  `${JSON.stringify({
    url: server.url,
    user: { email: user.email, password: PASSWORD, accountId: user.accountId },
    publicClient: { clientId: publicClient.client_id },
    confidentialClient: { clientId: confidential.client_id, clientSecret: confidential.client_secret },
    apiKeys: Object.fromEntries(server.demo.accounts.map((a) => [a.plan, a.apiKey])),
  })}\n`,
);

let stopping = false;
const stop = async () => {
  if (stopping) return;
  stopping = true;
  await server.close();
  process.exit(0);
};
process.stdin.on('end', stop).resume();
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
