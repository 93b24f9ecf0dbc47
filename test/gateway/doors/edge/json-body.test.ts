import { describe, expect, it } from 'vitest';
import { nestingExceeds } from '../../../../src/gateway/doors/edge/json-body.js';

describe('JSON body nesting', () => {
  it('counts brackets outside strings only', () => {
    expect(nestingExceeds('['.repeat(33) + ']'.repeat(33), 32)).toBe(true);
    expect(nestingExceeds('['.repeat(32) + ']'.repeat(32), 32)).toBe(false);
    expect(nestingExceeds(JSON.stringify({ note: '['.repeat(100) }), 32)).toBe(false);
    expect(nestingExceeds(JSON.stringify({ note: '\\"' + '{'.repeat(100) }), 32)).toBe(false);
  });

  it('counts both kinds of bracket, whether a body has few of them or many', () => {
    // 17 objects around 16 arrays: 33 levels, neither kind alone deeper than 32.
    const mixed = '{"a":['.repeat(16) + '{}' + ']}'.repeat(16);
    expect(nestingExceeds(mixed, 32)).toBe(true);
    expect(nestingExceeds('{"a":['.repeat(16) + '1' + ']}'.repeat(16), 32)).toBe(false);
    // Long, with few brackets: under the limit without a walk.
    expect(
      nestingExceeds(JSON.stringify({ query: `{ market { ${'protocolCount '.repeat(20)}} }` }), 32),
    ).toBe(false);
    // Many brackets side by side, none deep: walked, and still under the limit.
    expect(nestingExceeds(JSON.stringify({ rows: Array.from({ length: 100 }, () => [{}]) }), 32)).toBe(false);
  });
});
