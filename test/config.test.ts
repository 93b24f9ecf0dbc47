import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, parseFlag } from '../src/config.js';

describe('configuration', () => {
  it('has working defaults: port 4000 on 127.0.0.1 with SQLite under ./data', () => {
    const config = loadConfig({});
    expect(config).toMatchObject({
      port: 4000,
      host: '127.0.0.1',
      publicUrl: 'http://127.0.0.1:4000',
      demoSeed: true,
      maxActiveApiKeys: 5,
    });
    expect(config.databaseUrl).toMatch(/data\/tidegate\.sqlite$/);
    expect(config.apiKeyRotationGraceMs).toBe(24 * 3600_000);
    expect(config.planLimits.ANALYST).toEqual({ perMinute: 60, perMonth: 2000 });
    expect(config.planLimits.INSTITUTIONAL).toEqual({ perMinute: 600, perMonth: null });
  });

  it('reads overrides', () => {
    const config = loadConfig({
      PORT: '8080',
      DATABASE_URL: 'postgres://u@h/db',
      TRUST_PROXY: '10.0.0.0/8',
      LIMIT_ANALYST_PER_MONTH: 'unlimited',
      MAX_ACTIVE_API_KEYS: '10',
    });
    expect(config).toMatchObject({
      port: 8080,
      databaseUrl: 'postgres://u@h/db',
      trustProxy: '10.0.0.0/8',
      maxActiveApiKeys: 10,
    });
    expect(config.planLimits.ANALYST.perMonth).toBeNull();
  });

  it('rejects bad values, naming every problem at once', () => {
    try {
      loadConfig({
        PORT: 'eighty',
        DATABASE_URL: 'mysql://x',
        DEMO_SEED: 'maybe',
        API_KEY_ROTATION_GRACE: 'soon',
        LOG_LEVEL: 'verbose',
        TRUST_PROXY: '10.0.0.0/8, proxy.internal',
        ANSWER_CACHE_MB: '-1',
      });
      expect.unreachable();
    } catch (e) {
      expect(e).toBeInstanceOf(ConfigError);
      const message = (e as Error).message;
      expect(message).toContain("PORT must be an integer between 0 and 65535 (got 'eighty')");
      expect(message).toContain(
        "DATABASE_URL must be a SQLite file path or a postgres:// URL (got 'mysql://x')",
      );
      expect(message).toContain("DEMO_SEED must be true or false (got 'maybe')");
      expect(message).toContain("API_KEY_ROTATION_GRACE: 'soon' is not a duration");
      expect(message).toContain(
        "LOG_LEVEL must be one of trace, debug, info, warn, error, fatal, silent (got 'verbose')",
      );
      expect(message).toContain("not understood: 'proxy.internal'");
      expect(message).toContain("ANSWER_CACHE_MB must be an integer between 0 and 16384 (got '-1')");
    }
  });

  it('reads a yes-or-no variable in each of its spellings, as the bench reads its own flags', () => {
    for (const yes of ['true', 'TRUE', ' yes ', '1', 'on']) expect(parseFlag(yes)).toBe(true);
    for (const no of ['false', 'No', '0', 'off']) expect(parseFlag(no)).toBe(false);
    expect(parseFlag(undefined)).toBeUndefined();
    expect(parseFlag('')).toBeUndefined();
    expect(parseFlag('maybe')).toBe('invalid');
    expect(loadConfig({ DEMO_SEED: 'off' }).demoSeed).toBe(false);
  });

  it('serves the whole gateway unless SUBGRAPH names one of the subgraphs', () => {
    expect(loadConfig({}).subgraph).toBeUndefined();
    expect(loadConfig({ SUBGRAPH: 'port-ops' }).subgraph).toBe('port-ops');
    expect(() => loadConfig({ SUBGRAPH: 'vessels' })).toThrow(
      "SUBGRAPH must be one of accounts, port-ops, liquidity (got 'vessels')",
    );
  });

  it('understands every documented TRUST_PROXY form, in any case', () => {
    expect(loadConfig({ TRUST_PROXY: 'TRUE' }).trustProxy).toBe(true);
    expect(loadConfig({ TRUST_PROXY: 'False' }).trustProxy).toBe(false);
    expect(() => loadConfig({ TRUST_PROXY: '1' })).toThrow(/a hop count \('1'\) is not supported/);
    expect(loadConfig({ TRUST_PROXY: 'loopback, 10.0.0.0/8,::1' }).trustProxy).toBe(
      'loopback,10.0.0.0/8,::1',
    );
    expect(() => loadConfig({ TRUST_PROXY: '10.0.0.0/33' })).toThrow(/not understood: '10.0.0.0\/33'/);
    expect(loadConfig({ LOG_LEVEL: 'WARN' }).logLevel).toBe('warn');
  });

  it('bounds the resilience settings: a drain inside the grace, a sane token limit and deadline', () => {
    expect(loadConfig({})).toMatchObject({
      shutdownDrainMs: 1000,
      graphqlMaxTokens: 5000,
      graphqlDeadlineMs: 10_000,
    });
    expect(() => loadConfig({ SHUTDOWN_DRAIN_MS: '10000' })).toThrow(
      /SHUTDOWN_DRAIN_MS must be shorter than SHUTDOWN_GRACE/,
    );
    expect(loadConfig({ SHUTDOWN_DRAIN_MS: '0' }).shutdownDrainMs).toBe(0);
    expect(() => loadConfig({ GRAPHQL_MAX_TOKENS: '10' })).toThrow(/GRAPHQL_MAX_TOKENS must be an integer/);
    expect(() => loadConfig({ GRAPHQL_DEADLINE_MS: 'soon' })).toThrow(
      /GRAPHQL_DEADLINE_MS must be an integer/,
    );
  });
});
