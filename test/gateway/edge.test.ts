import { describe, expect, it } from 'vitest';
import { nestingExceeds } from '../../src/gateway/edge.js';

describe('JSON body nesting', () => {
  it('counts brackets outside strings only', () => {
    expect(nestingExceeds('['.repeat(33) + ']'.repeat(33), 32)).toBe(true);
    expect(nestingExceeds('['.repeat(32) + ']'.repeat(32), 32)).toBe(false);
    expect(nestingExceeds(JSON.stringify({ note: '['.repeat(100) }), 32)).toBe(false);
    expect(nestingExceeds(JSON.stringify({ note: '\\"' + '{'.repeat(100) }), 32)).toBe(false);
  });
});
