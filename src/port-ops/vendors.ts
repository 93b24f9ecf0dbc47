import type { EntityManager } from '@mikro-orm/knex';
import type { FilterQuery } from '@mikro-orm/core';
import type { Page } from '../gateway/schema/connection.js';
import { badInput } from '../kernel/errors.js';
import type { Principal } from '../kernel/principal.js';
import { optionalText, parseEnum, requireText } from '../kernel/text.js';
import { findOwned, findPage, tenant, type Deps } from './common.js';
import { Port, ServiceType, Vendor } from './entities.js';
import { parseEmail, parseLocode } from './validation.js';

export interface VendorInput {
  name: string;
  services: ServiceType[];
  ports: string[];
  contactEmail?: string | null;
  contactPhone?: string | null;
  active?: boolean | null;
}

async function vendorValues(em: EntityManager, input: Partial<VendorInput>) {
  const values: Partial<Vendor> = {};
  if (input.name !== undefined) values.name = requireText(input.name, 'name', 200);
  if (input.services !== undefined) {
    if (input.services.length === 0) throw badInput('services', 'must name at least one service type');
    values.services = [...new Set(input.services.map((s, i) => parseEnum(ServiceType, s, `services[${i}]`)))];
  }
  if (input.ports !== undefined) {
    if (input.ports.length === 0) throw badInput('ports', 'must name at least one port');
    const locodes = [...new Set(input.ports.map((p, i) => parseLocode(p, `ports[${i}]`)))];
    const known = new Set((await em.find(Port, { locode: { $in: locodes } })).map((p) => p.locode));
    const unknown = locodes.filter((l) => !known.has(l));
    if (unknown.length)
      throw badInput('ports', `unknown port(s): ${unknown.join(', ')}`, { rule: 'UNKNOWN_PORT' });
    values.ports = locodes;
  }
  if (input.contactEmail !== undefined) values.contactEmail = parseEmail(input.contactEmail);
  if (input.contactPhone !== undefined)
    values.contactPhone = optionalText(input.contactPhone, 'contactPhone', 40);
  if (input.active !== undefined && input.active !== null) values.active = input.active;
  return values;
}

export async function createVendor(deps: Deps, principal: Principal, input: VendorInput): Promise<Vendor> {
  const values = await vendorValues(deps.em, input);
  const vendor = deps.em.create(Vendor, {
    ...values,
    name: values.name!,
    services: values.services!,
    ports: values.ports!,
    active: values.active ?? true,
    accountId: principal.accountId,
    createdAt: deps.clock.now(),
  });
  await deps.em.persistAndFlush(vendor);
  return vendor;
}

export async function updateVendor(
  deps: Deps,
  principal: Principal,
  id: string,
  patch: Partial<VendorInput>,
): Promise<Vendor> {
  const vendor = await findOwned(deps.em, Vendor, 'Vendor', principal, id);
  Object.assign(vendor, await vendorValues(deps.em, patch));
  await deps.em.flush();
  return vendor;
}

export interface VendorFilter {
  portLocode?: string | null;
  serviceType?: ServiceType | null;
  active?: boolean | null;
}

/** Vendors are few per account; the JSON-array filters run in code over the account's list. */
export async function listVendors(em: EntityManager, principal: Principal, filter: VendorFilter, page: Page) {
  const where: FilterQuery<Vendor> = { ...tenant(principal) };
  if (filter.active !== undefined && filter.active !== null) where.active = filter.active;
  const locode = filter.portLocode ? parseLocode(filter.portLocode) : null;
  const service = filter.serviceType ? parseEnum(ServiceType, filter.serviceType, 'serviceType') : null;
  if (!locode && !service) return findPage(em, Vendor, where, { name: 'asc', id: 'asc' }, page);
  const all = (await em.find(Vendor, where, { orderBy: { name: 'asc', id: 'asc' } })).filter(
    (v) => (!locode || v.ports.includes(locode)) && (!service || v.services.includes(service)),
  );
  return { items: all.slice(page.offset, page.offset + page.limit), total: all.length };
}
