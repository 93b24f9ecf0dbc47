import { randomBytes } from 'node:crypto';
import { createConnection, createServer, type AddressInfo, type Socket } from 'node:net';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/config.js';
import type { Requirements } from '../../../src/gateway/pipeline/access.js';
import { RateLimiter } from '../../../src/gateway/pipeline/limits.js';
import {
  MemoryCounterStore,
  RedisCounterStore,
  ResilientCounterStore,
} from '../../../src/kernel/counters.js';
import { ManualClock } from '../../../src/kernel/clock.js';
import { AppError } from '../../../src/kernel/errors.js';
import { Plan } from '../../../src/kernel/plans.js';
import type { Principal } from '../../../src/kernel/principal.js';
import { TEST_REDIS_URL, describeWithRedis } from '../../helpers/env.js';

const liquidity: Requirements = {
  authenticated: true,
  scopes: [],
  plan: Plan.ANALYST,
  rootFields: ['Query.protocols'],
  operationType: 'query',
};
const portOps: Requirements = {
  authenticated: true,
  scopes: [],
  rootFields: ['Query.vessel'],
  operationType: 'query',
};

function principal(plan: Plan, accountId = 'acct-1', keyId = 'key-1'): Principal {
  return { accountId, plan, scopes: new Set(), credential: { kind: 'api_key', id: keyId } };
}

/** The AppError an admission refuses with (thrown at once or rejected). */
async function refusalOf(admit: () => unknown): Promise<AppError> {
  try {
    await admit();
  } catch (e) {
    if (e instanceof AppError) return e;
    throw e;
  }
  throw new Error('admitted, but a refusal was expected');
}

async function outcome(admit: () => unknown): Promise<'ok' | string> {
  try {
    await admit();
    return 'ok';
  } catch (e) {
    if (e instanceof AppError) return e.code;
    throw e;
  }
}

describe('RateLimiter (in-process)', () => {
  const config = loadConfig({
    LIMIT_ANALYST_PER_MINUTE: '3',
    LIMIT_ANALYST_PER_MONTH: '5',
    PORT_OPS_PER_MINUTE: '2',
  });

  it('admits the per-minute limit, then 429 with Retry-After until the next minute', async () => {
    const clock = new ManualClock('2026-03-10T12:00:15Z');
    const limiter = new RateLimiter(config, clock, new MemoryCounterStore(clock));
    const headers = [];
    for (let i = 0; i < 3; i++)
      headers.push((await limiter.admit(principal(Plan.ANALYST), liquidity)).headers);
    expect(headers.map((h) => h['X-RateLimit-Remaining'])).toEqual(['2', '1', '0']);
    expect(headers[0]).toMatchObject({
      'X-RateLimit-Limit': '3',
      'X-RateLimit-Reset': String(Date.parse('2026-03-10T12:01:00Z') / 1000),
    });
    const error = await refusalOf(() => limiter.admit(principal(Plan.ANALYST), liquidity));
    expect(error).toBeInstanceOf(AppError);
    expect((error as AppError).code).toBe('RATE_LIMIT_EXCEEDED');
    expect((error as AppError).headers).toMatchObject({
      'Retry-After': '45',
      'X-RateLimit-Remaining': '0',
      'X-RateLimit-Limit': '3',
    });
    clock.set('2026-03-10T12:01:00Z');
    expect(await outcome(() => limiter.admit(principal(Plan.ANALYST), liquidity))).toBe('ok');
  });

  it('shares the plan budget across the keys of one account, but not across accounts', async () => {
    const clock = new ManualClock('2026-03-10T12:00:00Z');
    const limiter = new RateLimiter(config, clock, new MemoryCounterStore(clock));
    for (const key of ['a', 'b', 'c'])
      expect(await outcome(() => limiter.admit(principal(Plan.ANALYST, 'acct-1', key), liquidity))).toBe(
        'ok',
      );
    expect(await outcome(() => limiter.admit(principal(Plan.ANALYST, 'acct-1', 'd'), liquidity))).toBe(
      'RATE_LIMIT_EXCEEDED',
    );
    expect(await outcome(() => limiter.admit(principal(Plan.ANALYST, 'acct-2', 'e'), liquidity))).toBe('ok');
  });

  it('spends the monthly quota, answers LIMIT_REACHED, and renews on the 1st (UTC)', async () => {
    const clock = new ManualClock('2026-03-31T23:50:00Z');
    const limiter = new RateLimiter(config, clock, new MemoryCounterStore(clock));
    const results = [];
    for (let i = 0; i < 6; i++) {
      clock.advance(60_000);
      results.push(await outcome(() => limiter.admit(principal(Plan.ANALYST), liquidity)));
    }
    expect(results).toEqual(['ok', 'ok', 'ok', 'ok', 'ok', 'LIMIT_REACHED']);
    const error = await refusalOf(() => limiter.admit(principal(Plan.ANALYST), liquidity));
    expect(error.message).toMatch(/5 calls per calendar month/);
    expect(Number(error.headers['Retry-After'])).toBe(
      Math.ceil((Date.parse('2026-04-01T00:00:00Z') - clock.now().getTime()) / 1000),
    );
    clock.set('2026-04-01T00:00:00Z');
    expect(await outcome(() => limiter.admit(principal(Plan.ANALYST), liquidity))).toBe('ok');
  });

  it('gives Institutional no monthly quota and port operations a per-credential budget of their own', async () => {
    const clock = new ManualClock('2026-03-10T12:00:00Z');
    const limiter = new RateLimiter(config, clock, new MemoryCounterStore(clock));
    const inst = await limiter.admit(principal(Plan.INSTITUTIONAL, 'acct-inst'), liquidity);
    expect(inst.headers['X-RateLimit-Limit']).toBe('600');
    expect(inst.headers['X-Quota-Limit']).toBeUndefined();
    expect(await outcome(() => limiter.admit(principal(Plan.ANALYST, 'acct-1', 'k1'), portOps))).toBe('ok');
    expect(await outcome(() => limiter.admit(principal(Plan.ANALYST, 'acct-1', 'k1'), portOps))).toBe('ok');
    expect(await outcome(() => limiter.admit(principal(Plan.ANALYST, 'acct-1', 'k1'), portOps))).toBe(
      'RATE_LIMIT_EXCEEDED',
    );
    expect(await outcome(() => limiter.admit(principal(Plan.ANALYST, 'acct-1', 'k2'), portOps))).toBe('ok');
    // Port operations did not touch the liquidity budget.
    expect(
      (await limiter.admit(principal(Plan.ANALYST, 'acct-1', 'k1'), liquidity)).headers[
        'X-RateLimit-Remaining'
      ],
    ).toBe('2');
  });
});

describeWithRedis('RateLimiter on one Redis shared by two processes', () => {
  it('never admits more than the limit between two limiters hammering concurrently', async () => {
    const prefix = `tidegate-test-${randomBytes(6).toString('hex')}:rl:`;
    const config = loadConfig({ LIMIT_ANALYST_PER_MINUTE: '60', LIMIT_ANALYST_PER_MONTH: '1000' });
    const clock = new ManualClock('2026-03-10T12:00:05Z');
    const stores = [
      new RedisCounterStore(TEST_REDIS_URL!, prefix),
      new RedisCounterStore(TEST_REDIS_URL!, prefix),
    ];
    await Promise.all(stores.map((s) => s.connect()));
    const limiters = stores.map((s) => new RateLimiter(config, clock, s));
    try {
      const attempts = Array.from({ length: 200 }, (_, i) =>
        outcome(() => limiters[i % 2]!.admit(principal(Plan.ANALYST, 'shared-acct'), liquidity)),
      );
      const results = await Promise.all(attempts);
      expect(results.filter((r) => r === 'ok')).toHaveLength(60);
      expect(results.filter((r) => r === 'RATE_LIMIT_EXCEEDED')).toHaveLength(140);
      // The monthly quota is shared too: only admitted calls were counted against it.
      clock.set('2026-03-10T12:01:05Z');
      const next = await limiters[1]!.admit(principal(Plan.ANALYST, 'shared-acct'), liquidity);
      expect(next.headers['X-Quota-Remaining']).toBe(String(1000 - 61));
    } finally {
      await Promise.all(limiters.map((l) => l.close()));
    }
  });
});

/** A TCP proxy in front of Redis that can go silent: bytes dropped both ways, sockets left open. */
async function silenceableProxy(target: URL) {
  let silent = false;
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    const upstream = createConnection(Number(target.port || 6379), target.hostname);
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('error', () => socket.destroy());
    }
    client.on('data', (chunk: Buffer) => silent || upstream.write(chunk));
    upstream.on('data', (chunk: Buffer) => silent || client.write(chunk));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `redis://127.0.0.1:${(server.address() as AddressInfo).port}`,
    silence: () => (silent = true),
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

describeWithRedis('RateLimiter when Redis stops answering', () => {
  it('keeps answering from per-process counters and says so once', async () => {
    const proxy = await silenceableProxy(new URL(TEST_REDIS_URL!));
    const clock = new ManualClock('2026-03-10T12:00:05Z');
    const config = loadConfig({ LIMIT_ANALYST_PER_MINUTE: '3' });
    const redis = new RedisCounterStore(
      proxy.url,
      `tidegate-test-${randomBytes(6).toString('hex')}:rl:`,
      100,
    );
    await redis.connect();
    const reports: unknown[] = [];
    const limiter = new RateLimiter(
      config,
      clock,
      new ResilientCounterStore(redis, new MemoryCounterStore(clock), clock, (e) => reports.push(e)),
    );
    try {
      expect((await limiter.admit(principal(Plan.ANALYST), liquidity)).headers['X-RateLimit-Remaining']).toBe(
        '2',
      );
      proxy.silence();
      // Redis no longer answers: the local counters take over (they start from zero) and limits still hold.
      const results = [];
      for (let i = 0; i < 4; i++)
        results.push(await outcome(() => limiter.admit(principal(Plan.ANALYST), liquidity)));
      expect(results).toEqual(['ok', 'ok', 'ok', 'RATE_LIMIT_EXCEEDED']);
      expect(reports).toHaveLength(1);
      expect(String(reports[0])).toMatch(/timed out/i);
    } finally {
      await limiter.close();
      await proxy.close();
    }
  });
});
