import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';

describe('authorization server configuration', () => {
  it('RESOURCE_URL (the token audience) defaults to PUBLIC_URL and drops a trailing slash', () => {
    expect(loadConfig({ PUBLIC_URL: 'https://auth.example/' }).resourceUrl).toBe('https://auth.example');
    const split = loadConfig({ PUBLIC_URL: 'https://auth.example', RESOURCE_URL: 'https://api.example/v/' });
    expect(split).toMatchObject({ publicUrl: 'https://auth.example', resourceUrl: 'https://api.example/v' });
  });

  it('per-IP throttle limits default to ten times the per-(IP, subject) limits and can be set', () => {
    expect(loadConfig({})).toMatchObject({
      authLoginMaxFailures: 5,
      authLoginMaxFailuresPerIp: 50,
      authClientMaxFailures: 10,
      authClientMaxFailuresPerIp: 100,
    });
    expect(
      loadConfig({
        AUTH_LOGIN_MAX_FAILURES: '3',
        AUTH_CLIENT_MAX_FAILURES: '4',
        AUTH_CLIENT_MAX_FAILURES_PER_IP: '7',
      }),
    ).toMatchObject({
      authLoginMaxFailuresPerIp: 30,
      authClientMaxFailures: 4,
      authClientMaxFailuresPerIp: 7,
    });
  });

  it('rejects a bad RESOURCE_URL and bad per-IP limits, naming each', () => {
    let error: unknown;
    try {
      loadConfig({
        RESOURCE_URL: 'not a url',
        AUTH_LOGIN_MAX_FAILURES_PER_IP: '0',
        AUTH_CLIENT_MAX_FAILURES_PER_IP: 'many',
      });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).problems).toEqual(
      expect.arrayContaining([
        "RESOURCE_URL must be an absolute URL (got 'not a url')",
        expect.stringMatching(
          /^AUTH_LOGIN_MAX_FAILURES_PER_IP must be an integer between 1 and \d+ \(got '0'\)$/,
        ),
        expect.stringMatching(
          /^AUTH_CLIENT_MAX_FAILURES_PER_IP must be an integer between 1 and \d+ \(got 'many'\)$/,
        ),
      ]),
    );
    expect((error as ConfigError).problems).toHaveLength(3);
  });
});
