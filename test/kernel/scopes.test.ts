import { describe, expect, it } from 'vitest';
import { ALL_SCOPES, hasScope, normalizeScope, parseScopes } from '../../src/kernel/scopes.js';
import { isAppError } from '../../src/kernel/errors.js';

describe('scope vocabulary', () => {
  it('accepts canonical names as they are', () => {
    for (const scope of ALL_SCOPES) expect(normalizeScope(scope)).toBe(scope);
  });

  it('normalises the resource-first spelling of the seed examples', () => {
    expect(normalizeScope('port-calls:read')).toBe('read:port_calls');
    expect(normalizeScope('vessels:read')).toBe('read:vessels');
    expect(normalizeScope('service-orders:write')).toBe('write:service_orders');
    expect(normalizeScope('port-calls:delete')).toBe('delete:port_calls');
    expect(normalizeScope('predictions:ai')).toBe('ai:predictions');
    expect(normalizeScope('manage:webhooks')).toBe('webhooks:manage');
    expect(normalizeScope('scoring-profiles:write')).toBe('write:scoring_profiles');
  });

  it('returns undefined for unknown scopes', () => {
    for (const s of ['read:everything', 'vessels:write', 'admin:read', '', 'read', 'a:b:c'])
      expect(normalizeScope(s)).toBeUndefined();
  });

  it('parses a space-separated list into canonical, de-duplicated names', () => {
    expect(parseScopes('vessels:read read:vessels  port-calls:read')).toEqual([
      'read:port_calls',
      'read:vessels',
    ]);
  });

  it('rejects a list with unknown scopes, naming every one', () => {
    try {
      parseScopes('read:vessels bogus:read nope');
      expect.unreachable();
    } catch (e) {
      expect(isAppError(e) && e.code).toBe('BAD_USER_INPUT');
      expect((e as Error).message).toBe('scopes: unknown scopes: bogus:read, nope');
    }
  });

  it('lets admin satisfy every scope', () => {
    expect(hasScope(new Set(['admin']), 'write:invoices')).toBe(true);
    expect(hasScope(new Set(['read:vessels']), 'write:invoices')).toBe(false);
  });
});
