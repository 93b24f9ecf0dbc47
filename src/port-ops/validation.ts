import { badInput } from '../kernel/errors.js';
import { optionalText } from '../kernel/text.js';

/**
 * IMO ship identification number: seven digits, the last a check digit. Multiply the first six
 * digits by 7, 6, 5, 4, 3, 2; the last digit of the sum is the check digit.
 * Accepts an optional `IMO` prefix (`IMO 9074729`). Returns the bare seven digits.
 */
export function parseImo(raw: string, field = 'imo'): string {
  const value = raw.trim().replace(/^IMO\s*/i, '');
  if (!/^\d{7}$/.test(value)) {
    throw badInput(field, `an IMO number is exactly 7 digits (got '${raw}')`, { rule: 'IMO_FORMAT' });
  }
  // Seven zeros pass the check-digit arithmetic (0 = 0) but are no ship's number.
  if (value === '0000000') throw badInput(field, 'IMO 0000000 is not an IMO number', { rule: 'IMO_FORMAT' });
  let sum = 0;
  for (let i = 0; i < 6; i++) sum += (value.charCodeAt(i) - 48) * (7 - i);
  const expected = sum % 10;
  if (value.charCodeAt(6) - 48 !== expected) {
    throw badInput(
      field,
      `IMO ${value} fails the check digit: the weighted sum of the first six digits (×7…×2) is ${sum}, so the last digit must be ${expected}`,
      { rule: 'IMO_CHECK_DIGIT' },
    );
  }
  return value;
}

/**
 * ISO 3166-1 officially assigned alpha-2 codes (249). ICU also names reserved and user-assigned
 * codes (EU, UN, QO, XK, ZZ …), which are not countries and cannot be flag states.
 */
export const ISO_3166_ALPHA2: ReadonlySet<string> = new Set(
  (
    'AD AE AF AG AI AL AM AO AQ AR AS AT AU AW AX AZ BA BB BD BE BF BG BH BI BJ BL BM BN BO BQ BR BS ' +
    'BT BV BW BY BZ CA CC CD CF CG CH CI CK CL CM CN CO CR CU CV CW CX CY CZ DE DJ DK DM DO DZ EC EE ' +
    'EG EH ER ES ET FI FJ FK FM FO FR GA GB GD GE GF GG GH GI GL GM GN GP GQ GR GS GT GU GW GY HK HM ' +
    'HN HR HT HU ID IE IL IM IN IO IQ IR IS IT JE JM JO JP KE KG KH KI KM KN KP KR KW KY KZ LA LB LC ' +
    'LI LK LR LS LT LU LV LY MA MC MD ME MF MG MH MK ML MM MN MO MP MQ MR MS MT MU MV MW MX MY MZ NA ' +
    'NC NE NF NG NI NL NO NP NR NU NZ OM PA PE PF PG PH PK PL PM PN PR PS PT PW PY QA RE RO RS RU RW ' +
    'SA SB SC SD SE SG SH SI SJ SK SL SM SN SO SR SS ST SV SX SY SZ TC TD TF TG TH TJ TK TL TM TN TO ' +
    'TR TT TV TW TZ UA UG UM US UY UZ VA VC VE VG VI VN VU WF WS YE YT ZA ZM ZW'
  ).split(' '),
);

/** ISO 3166-1 alpha-2 country code, upper-cased; only officially assigned codes. */
export function parseCountryCode(raw: string, field = 'flag'): string {
  const value = raw.trim().toUpperCase();
  if (!ISO_3166_ALPHA2.has(value)) {
    throw badInput(field, `must be an ISO 3166-1 alpha-2 country code, officially assigned (got '${raw}')`);
  }
  return value;
}

/**
 * UN/LOCODE: two-letter ISO country code + three characters from A–Z and 2–9 (the code list
 * never uses 0 or 1, to avoid confusion with O and I). Accepts `SG SIN`. Returns `SGSIN`.
 */
export function parseLocode(raw: string, field = 'portLocode'): string {
  const value = raw.trim().toUpperCase().replace(/\s+/g, '');
  if (!/^[A-Z]{2}[A-Z2-9]{3}$/.test(value)) {
    throw badInput(
      field,
      `a UN/LOCODE is 2 letters of country + 3 letters or digits 2–9, e.g. SGSIN (got '${raw}')`,
      { rule: 'LOCODE_FORMAT' },
    );
  }
  parseCountryCode(value.slice(0, 2), field);
  return value;
}

export function parseTimeZone(raw: string, field = 'timeZone'): string {
  try {
    return new Intl.DateTimeFormat('en', { timeZone: raw.trim() }).resolvedOptions().timeZone;
  } catch {
    throw badInput(field, `must be an IANA time zone such as Asia/Singapore (got '${raw}')`);
  }
}

export function parseEmail(raw: string | null | undefined, field = 'contactEmail'): string | null {
  const value = optionalText(raw, field, 320);
  if (value !== null && !/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(value))
    throw badInput(field, `is not an email address (got '${raw}')`);
  return value;
}
