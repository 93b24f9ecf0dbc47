import { randomBytes } from 'node:crypto';
import { expect, it } from 'vitest';
import { AuthRuntime } from '../../src/auth/runtime.js';
import { FailureThrottle } from '../../src/auth/throttle.js';
import { LocalEventBus } from '../../src/events/bus.js';
import { loadConfig } from '../../src/config.js';
import type { AppServices } from '../../src/gateway/schema/context.js';
import { ManualClock, systemClock } from '../../src/kernel/clock.js';
import {
  MemoryCounterStore,
  RedisCounterStore,
  ResilientCounterStore,
  openCounterStore,
} from '../../src/kernel/counters.js';
import { SecretBox } from '../../src/kernel/secret-box.js';
import { createTestDatabase } from '../helpers/db.js';
import { describeWithRedis, TEST_REDIS_URL } from '../helpers/env.js';
import { registerClient, silenceableRedisProxy, startAuthServer, tokenRequest } from './helpers.js';

const prefix = () => `tidegate-test-${randomBytes(6).toString('hex')}`;

describeWithRedis('auth throttle when Redis stops answering', () => {
  it('keeps counting failures in this process and says so once', async () => {
    const proxy = await silenceableRedisProxy(new URL(TEST_REDIS_URL!));
    const clock = new ManualClock('2026-03-10T12:00:05Z');
    const redis = new RedisCounterStore(proxy.url, `${prefix()}:auth:`, 100);
    await redis.connect();
    const reports: unknown[] = [];
    const store = new ResilientCounterStore(redis, new MemoryCounterStore(clock), clock, (e) =>
      reports.push(e),
    );
    const throttle = new FailureThrottle('client', store, { perSubject: 2, perIp: 100, windowMs: 60_000 });
    try {
      await throttle.fail('10.0.0.1', 'tgc_a');
      expect(await throttle.retryAfter('10.0.0.1', 'tgc_a')).toBe(0);
      proxy.silence();
      // Redis no longer answers: the local counters take over (from zero) and the limit still holds.
      expect(await throttle.retryAfter('10.0.0.1', 'tgc_a')).toBe(0);
      await throttle.fail('10.0.0.1', 'tgc_a');
      expect(await throttle.retryAfter('10.0.0.1', 'tgc_a')).toBe(0);
      await throttle.fail('10.0.0.1', 'tgc_a');
      expect(await throttle.retryAfter('10.0.0.1', 'tgc_a')).toBe(60);
      expect(reports).toHaveLength(1);
      expect(String(reports[0])).toMatch(/timed out/i);
      clock.advance(61_000);
      expect(await throttle.retryAfter('10.0.0.1', 'tgc_a')).toBe(0);
      expect(reports).toHaveLength(2);
    } finally {
      await store.close();
      await proxy.close();
    }
  });

  it('token requests still answer, and repeated wrong secrets are still refused with 429', async () => {
    // Only the throttle's connection goes silent; the server's other Redis clients keep working.
    const proxy = await silenceableRedisProxy(new URL(TEST_REDIS_URL!), (chunk) => chunk.includes(':auth:'));
    const server = await startAuthServer({
      env: { REDIS_URL: proxy.url, REDIS_PREFIX: prefix(), AUTH_CLIENT_MAX_FAILURES: '2' },
    });
    try {
      const client = await registerClient(server, systemClock, {
        accountId: server.demo.accounts[0]!.accountId,
        grantTypes: 'client_credentials',
      });
      const form = (secret = client.client_secret!) => ({
        grant_type: 'client_credentials',
        client_id: client.client_id,
        client_secret: secret,
      });
      expect((await tokenRequest(server, form())).status).toBe(200);
      proxy.silence();
      const issued = await tokenRequest(server, form());
      expect(issued.status).toBe(200);
      expect(issued.body.access_token).toEqual(expect.any(String));
      expect((await tokenRequest(server, form('tgcs_wrong'))).status).toBe(401);
      expect((await tokenRequest(server, form('tgcs_wrong'))).status).toBe(401);
      const throttled = await tokenRequest(server, form('tgcs_wrong'));
      expect(throttled.status).toBe(429);
      expect(throttled.body.error).toBe('temporarily_unavailable');
    } finally {
      await server.close();
      await proxy.close();
    }
  });

  it('a start that fails (wrong SECRETS_KEY) closes its Redis connection', async () => {
    const database = await createTestDatabase('sqlite');
    const proxy = await silenceableRedisProxy(new URL(TEST_REDIS_URL!));
    const logger = { info() {}, warn() {} } as unknown as AppServices['logger'];
    const runtime = async (secrets: SecretBox, env: Record<string, string> = {}) => {
      const config = loadConfig({ DATABASE_URL: database.url, ...env });
      const services = {
        config,
        clock: systemClock,
        db: database.db,
        secrets,
        logger,
        bus: new LocalEventBus(),
      } as unknown as AppServices;
      const store = await openCounterStore({
        redisUrl: config.redisUrl,
        prefix: `${config.redisPrefix}:auth:`,
        clock: systemClock,
        report: () => {},
      });
      return new AuthRuntime(services, store);
    };
    try {
      const first = await runtime(new SecretBox(randomBytes(32)));
      await first.start();
      await first.stop();

      const second = await runtime(new SecretBox(randomBytes(32)), {
        REDIS_URL: proxy.url,
        REDIS_PREFIX: prefix(),
      });
      await expect(second.start()).rejects.toThrow(/sealed with master key/);
      await expect.poll(() => proxy.accepted()).toBe(1);
      await expect.poll(() => proxy.openConnections(), { timeout: 2000 }).toBe(0);
    } finally {
      await proxy.close();
      await database.drop();
    }
  });
});
