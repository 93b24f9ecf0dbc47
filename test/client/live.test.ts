import { describe, expect, it } from 'vitest';
import { TidegateClient, type TidegateError, type WebSocketConstructor } from '../../src/client/index.js';
import { TierChangedDocument } from '../../src/generated/graphql.js';

describe('live connection that cannot open', () => {
  it('tells every subscription CONNECTION_FAILED, and a later subscription tries again', async () => {
    let attempts = 0;
    const Refusing = function () {
      attempts++;
      throw new Error('sockets are not allowed here');
    } as unknown as WebSocketConstructor;
    const client = new TidegateClient({
      baseUrl: 'http://127.0.0.1:9',
      apiKey: 'tg_any',
      WebSocket: Refusing,
    });
    const errors: TidegateError[] = [];
    const handlers = { next: () => undefined, error: (e: TidegateError) => errors.push(e) };
    client.subscribe(TierChangedDocument, {}, handlers);
    await new Promise((r) => setTimeout(r, 10));
    client.subscribe(TierChangedDocument, {}, handlers);
    await new Promise((r) => setTimeout(r, 10));
    expect(errors.map((e) => e.code)).toEqual(['CONNECTION_FAILED', 'CONNECTION_FAILED']);
    expect(errors[0]!.message).toContain('sockets are not allowed here');
    expect(attempts).toBe(2);
  });
});
