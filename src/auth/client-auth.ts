import type { FastifyReply, FastifyRequest } from 'fastify';
import { authenticateClient } from './clients.js';
import type { OAuthClient } from './entities.js';
import { formBody, type Form } from './form.js';
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
 * Authenticates the calling client. Failures count per source IP and per (IP, client_id), never
 * per client_id alone: client_ids are public, so such a counter would let anyone lock a client
 * out. Past a limit that IP gets 429 (even with the right secret) until the window ends.
 */
async function authenticateCaller(
  runtime: AuthRuntime,
  request: FastifyRequest,
  form: Form,
): Promise<OAuthClient> {
  const presented = presentedClient(request, form);
  const wait = await runtime.clientThrottle.retryAfter(request.ip, presented.clientId);
  if (wait > 0) throw tooManyAttempts(wait, 'client authentications from this address');
  const client = await authenticateClient(runtime.em, presented.clientId, presented.secret);
  if (!client) {
    await runtime.clientThrottle.fail(request.ip, presented.clientId);
    throw invalidClient();
  }
  return client;
}

/**
 * How every client-authenticated endpoint (token, revocation, introspection) starts: its answer is
 * never cached, its body is a form, and its caller is an authenticated client.
 */
export async function clientRequest(
  runtime: AuthRuntime,
  request: FastifyRequest,
  reply: FastifyReply,
): Promise<{ form: Form; client: OAuthClient }> {
  reply.header('cache-control', 'no-store');
  const form = formBody(request);
  return { form, client: await authenticateCaller(runtime, request, form) };
}
