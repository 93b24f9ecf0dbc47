import type { EntityManager } from '@mikro-orm/knex';
import { badInput, conflict, notFound } from '../kernel/errors.js';
import type { ServiceDeps } from '../kernel/deps.js';
import { parseEnum, requireText } from '../kernel/text.js';
import { uniqueConflict } from './common.js';
import { Port, Vessel, VesselType } from './entities.js';
import { parseCountryCode, parseImo, parseLocode, parseTimeZone } from './validation.js';

/* The shared registers of vessels and ports: every account reads them, only an admin writes. */

export interface VesselInput {
  imo: string;
  name: string;
  flag: string;
  type: VesselType;
  grossTonnage: number;
  deadweight: number;
  yearBuilt: number;
}

export async function createVessel(
  { em, clock }: Pick<ServiceDeps, 'em' | 'clock'>,
  input: VesselInput,
): Promise<Vessel> {
  const imo = parseImo(input.imo);
  const values = {
    imo,
    name: requireText(input.name, 'name', 200),
    flag: parseCountryCode(input.flag),
    type: parseEnum(VesselType, input.type, 'type'),
    grossTonnage: positiveInt(input.grossTonnage, 'grossTonnage'),
    deadweight: positiveInt(input.deadweight, 'deadweight'),
    yearBuilt: positiveInt(input.yearBuilt, 'yearBuilt'),
  };
  if (values.yearBuilt < 1900 || values.yearBuilt > clock.now().getUTCFullYear() + 3) {
    throw badInput('yearBuilt', `must be between 1900 and ${clock.now().getUTCFullYear() + 3}`);
  }
  const vessel = em.create(Vessel, { ...values, createdAt: clock.now() });
  await em.persistAndFlush(vessel).catch((error: unknown) => {
    throw uniqueConflict(error, {
      imo: () => conflict(`A vessel with IMO ${imo} already exists`, { field: 'imo' }),
    });
  });
  return vessel;
}

function positiveInt(value: number, field: string): number {
  if (!Number.isInteger(value) || value <= 0)
    throw badInput(field, `must be a positive integer (got ${value})`);
  return value;
}

export interface PortInput {
  locode: string;
  name: string;
  timeZone: string;
}

export async function createPort(
  { em, clock }: Pick<ServiceDeps, 'em' | 'clock'>,
  input: PortInput,
): Promise<Port> {
  const locode = parseLocode(input.locode, 'locode');
  const values = {
    locode,
    name: requireText(input.name, 'name', 200),
    country: locode.slice(0, 2),
    timeZone: parseTimeZone(input.timeZone),
  };
  const port = em.create(Port, { ...values, createdAt: clock.now() });
  await em.persistAndFlush(port).catch((error: unknown) => {
    throw uniqueConflict(error, {
      locode: () => conflict(`A port with UN/LOCODE ${locode} already exists`, { field: 'locode' }),
    });
  });
  return port;
}

export async function vesselByImo(em: EntityManager, raw: string, field = 'vesselImo'): Promise<Vessel> {
  const imo = parseImo(raw, field);
  const vessel = await em.findOne(Vessel, { imo });
  if (!vessel) throw notFound('Vessel', imo);
  return vessel;
}

export async function portByLocode(em: EntityManager, raw: string, field = 'portLocode'): Promise<Port> {
  const locode = parseLocode(raw, field);
  const port = await em.findOne(Port, { locode });
  if (!port) throw notFound('Port', locode);
  return port;
}
