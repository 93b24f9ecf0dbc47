import { badInput } from '../kernel/errors.js';
import { checkText, describeValue } from '../kernel/text.js';
import { FuelType, ServiceType } from './entities.js';

/**
 * `details` of a service order, validated per service type. Each type lists its fields; a field
 * is a small named check. Unknown fields are rejected so a typo (`quantiy`) is not silently lost.
 */
type Check = (value: unknown, field: string) => unknown;

const positiveNumber =
  (max: number): Check =>
  (value, field) => {
    if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0)
      throw badInput(field, `must be a number greater than 0 (got ${describeValue(value)})`);
    if (value > max) throw badInput(field, `must be at most ${max} (got ${value})`);
    return value;
  };

const intBetween =
  (min: number, max: number): Check =>
  (value, field) => {
    if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
      throw badInput(field, `must be an integer from ${min} to ${max} (got ${describeValue(value)})`);
    }
    return value;
  };

const oneOf =
  (values: readonly string[]): Check =>
  (value, field) => {
    if (typeof value !== 'string' || !values.includes(value))
      throw badInput(field, `must be one of ${values.join(', ')} (got ${describeValue(value)})`);
    return value;
  };

const text =
  (max: number): Check =>
  (value, field) => {
    if (typeof value !== 'string' || !value.trim()) throw badInput(field, 'must be a non-empty string');
    return checkText(value.trim(), field, { max, multiline: true });
  };

interface FieldSpec {
  check: Check;
  required: boolean;
}
const req = (check: Check): FieldSpec => ({ check, required: true });
const opt = (check: Check): FieldSpec => ({ check, required: false });

const notes = opt(text(2000));
const movement = opt(oneOf(['INBOUND', 'OUTBOUND', 'SHIFTING']));

export const DETAIL_SPECS: Readonly<Record<ServiceType, Record<string, FieldSpec>>> = {
  BUNKERING: {
    quantity: req(positiveNumber(100_000)),
    unit: req(oneOf(['MT', 'M3'])),
    fuelType: req(oneOf(Object.values(FuelType))),
    deliveryMethod: opt(oneOf(['BARGE', 'TRUCK', 'PIPELINE'])),
    notes,
  },
  PILOTAGE: { movement, notes },
  TOWAGE: { tugs: req(intBetween(1, 8)), movement, notes },
  MOORING: { operation: opt(oneOf(['MOOR', 'UNMOOR', 'SHIFT'])), notes },
  FRESH_WATER: { quantity: req(positiveNumber(20_000)), unit: req(oneOf(['MT', 'M3'])), notes },
  PROVISIONS: { description: req(text(2000)), notes },
  WASTE_REMOVAL: {
    wasteType: req(oneOf(['OILY', 'SEWAGE', 'GARBAGE', 'SLUDGE'])),
    quantity: req(positiveNumber(10_000)),
    unit: req(oneOf(['M3', 'MT'])),
    notes,
  },
  CREW_CHANGE: { joining: req(intBetween(0, 100)), leaving: req(intBetween(0, 100)), notes },
  REPAIRS: { description: req(text(2000)), notes },
  SURVEY: { surveyType: req(text(200)), notes },
};

export function parseServiceDetails(serviceType: ServiceType, raw: unknown): Record<string, unknown> {
  if (raw === undefined || raw === null) raw = {};
  if (typeof raw !== 'object' || Array.isArray(raw)) throw badInput('details', 'must be a JSON object');
  const input = raw as Record<string, unknown>;
  const spec = DETAIL_SPECS[serviceType];
  const unknown = Object.keys(input).filter((k) => !(k in spec));
  if (unknown.length) {
    throw badInput(
      `details.${unknown[0]}`,
      `is not a ${serviceType} detail (allowed: ${Object.keys(spec).join(', ')})`,
      { rule: 'UNKNOWN_DETAIL' },
    );
  }
  const out: Record<string, unknown> = {};
  for (const [name, field] of Object.entries(spec)) {
    const value = input[name];
    if (value === undefined || value === null) {
      if (field.required)
        throw badInput(`details.${name}`, `is required for ${serviceType}`, { rule: 'DETAIL_REQUIRED' });
      continue;
    }
    out[name] = field.check(value, `details.${name}`);
  }
  if (serviceType === ServiceType.CREW_CHANGE && out.joining === 0 && out.leaving === 0) {
    throw badInput('details.joining', 'a crew change needs at least one person joining or leaving');
  }
  return out;
}
