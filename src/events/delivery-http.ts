import http, { type IncomingMessage } from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import { RESPONSE_SNIPPET_BYTES } from './entities.js';
import type { ResolvedAddress, VettedTarget } from './ssrf.js';

/** What a receiver said: its status and the start of its body, or why there was no answer. */
export interface Answer {
  statusCode: number | null;
  error: string | null;
  snippet: string | null;
}

/**
 * The webhook deliverer's HTTP side: POSTs a signed body to an address `ssrf.ts` has vetted, over
 * keep-alive agents sized to the outbox's attempt slots. It never resolves a name itself.
 */
export class WebhookHttp {
  private readonly httpAgent: http.Agent;
  private readonly httpsAgent: https.Agent;

  constructor(maxSockets: number) {
    this.httpAgent = new http.Agent({ keepAlive: true, maxSockets });
    this.httpsAgent = new https.Agent({ keepAlive: true, maxSockets });
  }

  destroy(): void {
    this.httpAgent.destroy();
    this.httpsAgent.destroy();
  }

  /**
   * POSTs to the checked addresses only (never a fresh DNS answer), in the resolver's order: when
   * one cannot be connected to, the next is tried; any answer counts.
   */
  async post(
    target: VettedTarget,
    body: string,
    signal: AbortSignal,
    headers: Record<string, string>,
  ): Promise<Answer> {
    const unreachable: string[] = [];
    for (const address of target.addresses) {
      const outcome = await this.postTo(target.url, address, body, signal, headers);
      if (!('connectError' in outcome)) return outcome;
      unreachable.push(`${address.address}: ${outcome.connectError}`);
      if (signal.aborted) break;
    }
    return { statusCode: null, error: `could not connect (${unreachable.join('; ')})`, snippet: null };
  }

  private postTo(
    url: URL,
    address: ResolvedAddress,
    body: string,
    signal: AbortSignal,
    headers: Record<string, string>,
  ): Promise<Answer | { connectError: string }> {
    const pinned: LookupFunction = (_hostname, options, callback) => {
      if (options.all) callback(null, [address]);
      else callback(null, address.address, address.family);
    };
    const secure = url.protocol === 'https:';
    return new Promise((resolve) => {
      const request = (secure ? https : http).request(url, {
        method: 'POST',
        headers: { ...headers, 'content-length': Buffer.byteLength(body) },
        lookup: pinned,
        agent: secure ? this.httpsAgent : this.httpAgent,
        signal,
      });
      let connected = false;
      let answered = false;
      request.on('socket', (socket) => {
        if (!socket.connecting) connected = true;
        else socket.once('connect', () => (connected = true));
      });
      request.on('response', (response) => {
        answered = true;
        void readSnippet(response, signal).then((snippet) =>
          resolve({ statusCode: response.statusCode ?? null, error: null, snippet }),
        );
      });
      request.on('error', (e) => {
        if (answered) return; // the status is in; only the body was cut short
        if (signal.aborted)
          resolve({ statusCode: null, error: (signal.reason as Error).message, snippet: null });
        else if (!connected) resolve({ connectError: e.message });
        else resolve({ statusCode: null, error: e.message, snippet: null });
      });
      request.end(body);
    });
  }
}

/**
 * Reads at most RESPONSE_SNIPPET_BYTES of a response body for the delivery log, then lets go:
 * the rest is never read (the socket is destroyed unless the body had already ended).
 */
function readSnippet(response: IncomingMessage, signal: AbortSignal): Promise<string | null> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let settled = false;
    const finish = () => {
      if (settled) return;
      settled = true;
      signal.removeEventListener('abort', finish);
      if (!response.complete) response.destroy();
      resolve(size > 0 ? Buffer.concat(chunks).subarray(0, RESPONSE_SNIPPET_BYTES).toString('utf8') : null);
    };
    response.on('data', (chunk: Buffer) => {
      chunks.push(chunk);
      size += chunk.length;
      if (size >= RESPONSE_SNIPPET_BYTES) finish();
    });
    response.once('end', finish);
    response.once('close', finish);
    response.once('error', finish);
    signal.addEventListener('abort', finish, { once: true });
  });
}
