import type { FastifyRequest } from 'fastify';
import { authenticateClient } from './clients.js';
import type { OAuthClient } from './entities.js';
import type { Form } from './form.js';
import { invalidClient, invalidRequest, tooManyAttempts } from './oauth-error.js';
import type { AuthRuntime } from './runtime.js';

interface PresentedClient {
  clientId: string;
  secret: string | undefined;
}

/** client_secret_basic (form-urlencoded id and secret, RFC 6749 §2.3.1) or client_secret_post; never both. */
function presentedClient(request: FastifyRequest, form: Form): PresentedClient {
  const header = request.headers.authorization;
  if (header !== undefined) {
    const match = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(header);
    if (!match) throw invalidClient();
    if (form.client_secret !== undefined)
      throw invalidRequest('use one client authentication method, not two');
    const decoded = Buffer.from(match[1]!, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    if (colon < 0) throw invalidClient();
    let clientId: string;
    let secret: string;
    try {
      clientId = decodeURIComponent(decoded.slice(0, colon).replace(/\+/g, ' '));
      secret = decodeURIComponent(decoded.slice(colon + 1).replace(/\+/g, ' '));
    } catch {
      throw invalidClient();
    }
    if (form.client_id !== undefined && form.client_id !== clientId) {
      throw invalidRequest('client_id in the body differs from the one in the Authorization header');
    }
    return { clientId, secret };
  }
  return { clientId: form.client_id ?? '', secret: form.client_secret };
}

/**
 * Authenticates the calling client. Failures count per IP and per client_id; past the limit the
 * caller gets 429 (even with the right secret) until the window ends, which bounds guessing.
 */
export async function authenticateCaller(
  runtime: AuthRuntime,
  request: FastifyRequest,
  form: Form,
): Promise<OAuthClient> {
  const presented = presentedClient(request, form);
  const keys = [`ip:${request.ip}`, `client:${presented.clientId}`];
  const wait = runtime.clientThrottle.retryAfter(keys);
  if (wait > 0) throw tooManyAttempts(wait, 'client authentications');
  const client = await authenticateClient(runtime.em, presented.clientId, presented.secret);
  if (!client) {
    runtime.clientThrottle.fail(keys);
    throw invalidClient();
  }
  return client;
}
