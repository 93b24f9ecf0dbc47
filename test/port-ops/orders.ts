import { expect } from 'vitest';
import { rest, type Json } from '../helpers/server.js';

/*
 * New bunkering orders for the port-ops tests: a scheduled call of the caller's account with a
 * bunkering vendor at its port, an order on it through the REST route, and its confirmation.
 */

/** The caller's first scheduled call that a bunkering vendor of the account serves, and that vendor. */
export async function orderableCall(url: string, key: string): Promise<{ call: Json; vendor: Json }> {
  const calls = (await rest(url, '/v1/port-calls?status=SCHEDULED&limit=100', { key })).body.data as Json[];
  const vendors = await bunkeringVendors(url, key);
  const call = calls.find((c) => vendors.some((v) => v.ports.includes(c.portLocode)));
  expect(call, 'a scheduled call with a bunkering vendor at its port').toBeDefined();
  return { call: call!, vendor: vendors.find((v) => v.ports.includes(call!.portLocode))! };
}

/** The bunkering vendor of the account at `call`'s port. */
export async function bunkeringVendorAt(url: string, key: string, call: Json): Promise<Json> {
  const vendor = (await bunkeringVendors(url, key)).find((v) => v.ports.includes(call.portLocode));
  expect(vendor, `a bunkering vendor at ${call.portLocode}`).toBeDefined();
  return vendor!;
}

/** The account's bunkering vendors. */
async function bunkeringVendors(url: string, key: string): Promise<Json[]> {
  return (await rest(url, '/v1/vendors?serviceType=BUNKERING&limit=100', { key })).body.data as Json[];
}

/** A new bunkering order on `call` by `vendor`: its id (the route must answer 201). */
export async function postBunkers(url: string, key: string, call: Json, vendor: Json): Promise<string> {
  const created = await rest(url, '/v1/service-orders', {
    method: 'POST',
    key,
    body: {
      portCallId: call.id,
      serviceType: 'BUNKERING',
      vendorId: vendor.id,
      details: { quantity: 500, unit: 'MT', fuelType: 'VLSFO' },
    },
  });
  expect(created.status, created.text).toBe(201);
  return created.body.id as string;
}

/** Confirms order `orderId` through the REST route (which must answer 200). */
export async function confirmOrder(url: string, key: string, orderId: string): Promise<void> {
  const confirmed = await rest(url, `/v1/service-orders/${orderId}/status`, {
    method: 'POST',
    key,
    body: { status: 'CONFIRMED' },
  });
  expect(confirmed.status, confirmed.text).toBe(200);
}
