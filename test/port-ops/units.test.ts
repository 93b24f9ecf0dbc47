import { describe, expect, it, vi } from 'vitest';
import { contentDisposition, uploadSecretOf } from '../../src/port-ops/documents.js';
import { computeTotals, parseDueDate } from '../../src/port-ops/invoices.js';
import { quantile } from '../../src/port-ops/stats.js';
import { ISO_3166_ALPHA2, parseCountryCode, parseImo } from '../../src/port-ops/validation.js';

const message = (run: () => unknown) => {
  try {
    run();
  } catch (error) {
    return (error as Error).message;
  }
  throw new Error('expected an error');
};

describe('quantile (type 7, linear interpolation)', () => {
  it('interpolates between order statistics', () => {
    expect(quantile([1, 2, 3, 4], 0.5)).toBe(2.5);
    expect(quantile([1, 2, 3, 4], 0.9)).toBeCloseTo(3.7, 12);
    expect(quantile([10, 20, 30, 40], 0.1)).toBeCloseTo(13, 12);
    expect(quantile([1, 2, 3, 4], 0)).toBe(1);
    expect(quantile([1, 2, 3, 4], 1)).toBe(4);
    expect(quantile([5], 0.9)).toBe(5);
    expect(quantile([], 0.5)).toBeNaN();
  });
});

describe('computeTotals (exact cents)', () => {
  it('rounds each line half-up to cents and the tax once on the subtotal', () => {
    const totals = computeTotals(
      [
        { description: 'a', quantity: '0.005', unitPrice: '1.00' },
        { description: 'b', quantity: '2.5', unitPrice: '0.01' },
        { description: 'c', quantity: '001.500', unitPrice: '3' },
      ],
      '10.05',
    );
    // 0.005 → 0.01; 0.025 → 0.03; 4.50; subtotal 4.54; tax 10.05 % = 0.456… → 0.46
    expect(totals).toEqual({
      lines: [
        { description: 'a', quantity: '0.005', unitPrice: '1.00', amount: '0.01', serviceOrderId: null },
        { description: 'b', quantity: '2.5', unitPrice: '0.01', amount: '0.03', serviceOrderId: null },
        { description: 'c', quantity: '1.5', unitPrice: '3.00', amount: '4.50', serviceOrderId: null },
      ],
      taxRate: '10.05',
      subtotal: '4.54',
      tax: '0.46',
      total: '5.00',
    });
  });

  it('refuses what would not fit or make sense, naming the line and field', () => {
    const line = (quantity: string, unitPrice: string) => [{ description: 'x', quantity, unitPrice }];
    expect(message(() => computeTotals([], '0'))).toBe('lines: an invoice needs at least one line');
    expect(message(() => computeTotals(line('1000000000.001', '1'), '0'))).toBe(
      'lines[0].quantity: must be at most 1000000000',
    );
    expect(message(() => computeTotals(line('1', '1000000000.01'), '0'))).toBe(
      'lines[0].unitPrice: must be at most 1000000000',
    );
    expect(message(() => computeTotals(line('0', '1'), '0'))).toBe(
      'lines[0].quantity: must be greater than 0',
    );
    expect(message(() => computeTotals(line('1', '-1'), '0'))).toBe(
      'lines[0].unitPrice: must not be negative',
    );
    expect(message(() => computeTotals(line('1', '1'), '100.01'))).toBe(
      'taxRate: must be a percentage from 0 to 100',
    );
    expect(message(() => computeTotals(line('1.0001', '1'), '0'))).toMatch(
      /^lines\[0\]\.quantity: must be a decimal with at most 3 decimal places/,
    );
  });
});

describe('parseImo', () => {
  it('accepts seven digits with a valid check digit, with or without the IMO prefix', () => {
    expect(parseImo('9074729')).toBe('9074729');
    expect(parseImo(' imo 9074729 ')).toBe('9074729');
  });

  it('names the rule it broke', () => {
    expect(message(() => parseImo('907472'))).toBe("imo: an IMO number is exactly 7 digits (got '907472')");
    expect(message(() => parseImo('9074728'))).toBe(
      'imo: IMO 9074728 fails the check digit: the weighted sum of the first six digits (×7…×2) is 139, so the last digit must be 9',
    );
    expect(message(() => parseImo('0000000', 'vesselImo'))).toBe(
      'vesselImo: IMO 0000000 is not an IMO number',
    );
  });
});

describe('parseCountryCode', () => {
  it('knows the 249 officially assigned ISO 3166-1 codes, each a region ICU can name', () => {
    expect(ISO_3166_ALPHA2.size).toBe(249);
    const names = new Intl.DisplayNames(['en'], { type: 'region', fallback: 'none' });
    expect([...ISO_3166_ALPHA2].filter((code) => !names.of(code))).toEqual([]);
    expect(parseCountryCode(' sg ')).toBe('SG');
  });

  it('refuses reserved and user-assigned codes ICU also names', () => {
    for (const code of ['ZZ', 'EU', 'UN', 'QO', 'XK', 'EZ', 'AA'])
      expect(message(() => parseCountryCode(code))).toMatch(
        /^flag: must be an ISO 3166-1 alpha-2 country code/,
      );
  });
});

describe('parseDueDate', () => {
  const today = new Date('2026-03-10T15:00:00Z');
  it('takes a calendar date, or a date-time at midnight UTC, from the invoice date on', () => {
    expect(parseDueDate('2026-03-10', today)).toEqual(new Date('2026-03-10T00:00:00Z'));
    expect(parseDueDate('2026-04-01T00:00:00Z', today)).toEqual(new Date('2026-04-01T00:00:00Z'));
  });

  it('refuses times of day, impossible dates and dates before the invoice date', () => {
    expect(message(() => parseDueDate('2026-04-01T00:00:01Z', today))).toMatch(/accepted only at 00:00 UTC/);
    expect(message(() => parseDueDate('2026-02-29', today))).toBe(
      "dueDate: must be a calendar date YYYY-MM-DD (got '2026-02-29')",
    );
    expect(message(() => parseDueDate('2026-03-09', today))).toBe(
      'dueDate: must not be before the invoice date 2026-03-10 (got 2026-03-09)',
    );
    expect(message(() => parseDueDate('2026-13-01', today))).toBe(
      "dueDate: must be a calendar date YYYY-MM-DD (got '2026-13-01')",
    );
    expect(message(() => parseDueDate('', today))).toBe('dueDate: is required');
    expect(message(() => parseDueDate('   ', today))).toBe('dueDate: is required');
  });
});

describe('uploadSecretOf', () => {
  it('derives the key from the master key when DOCUMENT_UPLOAD_SECRET is not set', () => {
    const derive = vi.fn(() => Buffer.from('derived key'));
    const secret = uploadSecretOf({ documentUploadSecret: undefined }, { derive });
    expect(secret).toBe(Buffer.from('derived key').toString('base64url'));
    expect(derive).toHaveBeenCalledWith('tidegate/document-upload');
  });

  it('takes DOCUMENT_UPLOAD_SECRET as it is when set', () => {
    const derive = vi.fn(() => Buffer.from('derived key'));
    expect(uploadSecretOf({ documentUploadSecret: 'configured' }, { derive })).toBe('configured');
    expect(derive).not.toHaveBeenCalled();
  });
});

describe('contentDisposition', () => {
  it('sends an ASCII fallback and the exact UTF-8 name (RFC 6266 / 8187)', () => {
    expect(contentDisposition('Läufer€.pdf')).toBe(
      `attachment; filename="L_ufer_.pdf"; filename*=UTF-8''L%C3%A4ufer%E2%82%AC.pdf`,
    );
    expect(contentDisposition(`it's (100%) "ok"*.txt`)).toBe(
      `attachment; filename="it's (100_) _ok_*.txt"; filename*=UTF-8''it%27s%20%28100%25%29%20%22ok%22%2A.txt`,
    );
  });
});
