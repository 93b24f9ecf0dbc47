import { describe, expect, it } from 'vitest';
import { checkJsonText, checkText, describeValue, optionalText, requireText } from '../../src/kernel/text.js';

const refusal = (run: () => unknown) => {
  try {
    run();
  } catch (e) {
    return e as { code: string; message: string; details: Record<string, unknown> };
  }
  throw new Error('not refused');
};

describe('text at the edge of the domain', () => {
  it('refuses NUL and every other C0 control character and DEL, naming the field and the code point', () => {
    for (let code = 0; code < 32; code++) {
      const error = refusal(() => checkText(`a${String.fromCharCode(code)}b`, 'name'));
      expect(error.code).toBe('BAD_USER_INPUT');
      expect(error.message).toBe(
        `name: must not contain the control character U+${code.toString(16).toUpperCase().padStart(4, '0')}`,
      );
      expect(error.details).toMatchObject({ field: 'name', rule: 'CONTROL_CHARACTER' });
    }
    expect(refusal(() => checkText('a\u007fb', 'name')).message).toMatch(/U\+007F/);
  });

  it('lets free text keep tab and line breaks, and nothing else below U+0020', () => {
    expect(checkText('line 1\r\n\tline 2', 'notes', { multiline: true })).toBe('line 1\r\n\tline 2');
    expect(refusal(() => checkText('a\u0000b', 'notes', { multiline: true })).message).toMatch(/U\+0000/);
    expect(refusal(() => checkText('a\nb', 'name')).message).toMatch(/U\+000A/);
  });

  it('refuses unpaired surrogates and keeps paired ones (emoji, astral scripts)', () => {
    for (const bad of ['\ud800', 'x\udfff', '\ude00z', 'a\ud83d']) {
      expect(refusal(() => checkText(bad, 'agent')).details).toMatchObject({ rule: 'INVALID_UNICODE' });
    }
    expect(checkText('ship 🚢 𝔸', 'agent')).toBe('ship 🚢 𝔸');
  });

  it('bounds the length and trims required and optional text', () => {
    expect(refusal(() => checkText('x'.repeat(11), 'name', { max: 10 })).message).toBe(
      'name: must be at most 10 characters (got 11)',
    );
    expect(requireText('  Tern  ', 'name', 10)).toBe('Tern');
    expect(refusal(() => requireText('   ', 'name', 10)).message).toBe('name: must not be empty');
    expect(optionalText('  ', 'agent', 10)).toBeNull();
    expect(refusal(() => optionalText('a\u0000', 'agent', 10)).details).toMatchObject({ field: 'agent' });
  });

  it('walks free-form JSON: every key and string checked, nesting bounded, the path named', () => {
    expect(() =>
      checkJsonText({ fuelType: 'VLSFO', notes: ['ok', { deep: 'fine' }] }, 'details'),
    ).not.toThrow();
    expect(refusal(() => checkJsonText({ notes: ['ok', 'a\u0000'] }, 'details')).message).toMatch(
      /^details\.notes\[1\]: must not contain the control character U\+0000$/,
    );
    expect(refusal(() => checkJsonText({ 'a\u0001': 1 }, 'details')).message).toMatch(/^details \(a key\)/);
    let deep: unknown = 1;
    for (let i = 0; i < 9; i++) deep = [deep];
    expect(refusal(() => checkJsonText(deep, 'weights')).details).toMatchObject({ rule: 'TOO_DEEP' });
  });

  it('quotes a caller value briefly and names arrays and objects by kind', () => {
    expect(describeValue('x'.repeat(100))).toBe(`"${'x'.repeat(59)}…`);
    expect(describeValue([[[1]]])).toBe('an array');
    expect(describeValue({ a: 1 })).toBe('an object');
    expect(describeValue(null)).toBe('null');
  });
});
