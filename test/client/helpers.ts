import { systemClock } from '../../src/kernel/clock.js';
import type { TestServer, TestServerOptions } from '../helpers/server.js';
import {
  Browser,
  consent,
  createAnalystUser,
  PASSWORD,
  registerClient,
  startAuthServer,
} from '../auth/helpers.js';

export const CLIENT_SCOPES = 'read:vessels read:port_calls read:liquidity';

/** The real server with an analyst user, a public client (PKCE) and a confidential one (client credentials). */
export async function startClientServer(options: TestServerOptions & { redirectUri?: string } = {}) {
  const server = await startAuthServer(options);
  const user = await createAnalystUser(server, systemClock);
  const redirectUri = options.redirectUri ?? 'http://127.0.0.1/callback';
  const publicClient = await registerClient(server, systemClock, {
    accountId: user.accountId,
    public: true,
    redirectUris: [redirectUri],
    scopes: CLIENT_SCOPES,
  });
  const confidential = await registerClient(server, systemClock, {
    accountId: user.accountId,
    scopes: CLIENT_SCOPES,
    grantTypes: 'client_credentials',
  });
  return { server, user, publicClient, confidential, redirectUri };
}

/** Plays the user at the authorization server: signs in, approves, returns where the browser is sent back to. */
export async function approve(server: TestServer, email: string, authorizationUrl: string): Promise<URL> {
  const browser = new Browser(server.url);
  await browser.login(email, PASSWORD);
  const params = Object.fromEntries(new URL(authorizationUrl).searchParams);
  return consent(browser, params as never);
}
