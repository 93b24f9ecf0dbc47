import type { EntityManager } from '@mikro-orm/knex';
import { findPlain } from '../db/plain.js';
import { DAY, type Clock } from '../kernel/clock.js';
import { checkDate } from '../kernel/dates.js';
import { NO_DEADLINE, type Deadline } from '../kernel/deadline.js';
import { badInput } from '../kernel/errors.js';
import type { Principal } from '../kernel/principal.js';
import { tenant } from './common.js';
import {
  Invoice,
  InvoiceStatus,
  Port,
  PortCall,
  PortCallStatus,
  ServiceOrder,
  ServiceOrderStatus,
  ServiceType,
  Vendor,
  Vessel,
  VesselType,
} from './entities.js';
import { cents, formatCents } from './money.js';
import { portByLocode } from './reference-data.js';
import { HOURS, mean, quantile, round, sortNumbers } from './stats.js';

/*
 * Analytics are computed in code over the account's rows in the requested window: each report is
 * one statement for its facts plus one per small dimension table (ports, vessels, vendors), so
 * the statement count stays constant whatever the data size. Windows are capped at 3 years.
 * Facts are read as plain rows (entity hydration of thousands of rows was most of a report's
 * time), and each report yields to other requests between reading and computing, within the
 * operation's deadline.
 */

export enum Period {
  ALL = 'ALL',
  MONTH = 'MONTH',
  QUARTER = 'QUARTER',
  YEAR = 'YEAR',
}

export interface Window {
  from: Date;
  to: Date;
}

const MAX_WINDOW_MS = 3 * 366 * DAY;
/** An order completed up to this long after the requested time still counts as on time. */
export const ON_TIME_GRACE_MS = 2 * 3_600_000;

export function windowOf(clock: Clock, from?: Date | null, to?: Date | null): Window {
  const end = to ? checkDate(to, 'to') : clock.now();
  const start = from ? checkDate(from, 'from') : new Date(end.getTime() - 365 * DAY);
  if (start >= end) throw badInput('from', 'must be before to');
  if (end.getTime() - start.getTime() > MAX_WINDOW_MS)
    throw badInput('from', 'the window may span at most 3 years');
  return { from: start, to: end };
}

export function periodKey(date: Date, period: Period): string | null {
  const y = date.getUTCFullYear();
  const m = date.getUTCMonth();
  switch (period) {
    case Period.ALL:
      return null;
    case Period.MONTH:
      return `${y}-${String(m + 1).padStart(2, '0')}`;
    case Period.QUARTER:
      return `${y}-Q${Math.floor(m / 3) + 1}`;
    case Period.YEAR:
      return String(y);
  }
}

async function dimensions(em: EntityManager) {
  const [ports, vessels] = await Promise.all([
    findPlain(em, Port, {}),
    findPlain(em, Vessel, {}, { fields: ['id', 'type', 'imo'] }),
  ]);
  return { ports: new Map(ports.map((p) => [p.id, p])), vessels: new Map(vessels.map((v) => [v.id, v])) };
}

export interface TurnaroundRow {
  portLocode: string | null;
  vesselType: VesselType | null;
  period: string | null;
  calls: number;
  meanHours: number;
  medianHours: number;
  p90Hours: number;
}

/** Time in port (ATD − ATA) of departed calls whose ATA falls in the window. */
export async function turnaround(
  em: EntityManager,
  principal: Principal,
  window: Window,
  groupBy: { byPort: boolean; byVesselType: boolean; period: Period },
  deadline: Deadline = NO_DEADLINE,
): Promise<TurnaroundRow[]> {
  await deadline.checkpoint('the turnaround report');
  const [calls, dims] = await Promise.all([
    findPlain(
      em,
      PortCall,
      { ...tenant(principal), status: PortCallStatus.DEPARTED, ata: { $gte: window.from, $lt: window.to } },
      { fields: ['portId', 'vesselId', 'ata', 'atd'] },
    ),
    dimensions(em),
  ]);
  await deadline.checkpoint('the turnaround report');
  const groups = new Map<
    string,
    { row: Omit<TurnaroundRow, 'calls' | 'meanHours' | 'medianHours' | 'p90Hours'>; hours: number[] }
  >();
  for (const call of calls) {
    if (!call.ata || !call.atd) continue;
    const portLocode = groupBy.byPort ? dims.ports.get(call.portId)!.locode : null;
    const vesselType = groupBy.byVesselType ? dims.vessels.get(call.vesselId)!.type : null;
    const period = periodKey(call.ata, groupBy.period);
    const key = `${portLocode}|${vesselType}|${period}`;
    const group = groups.get(key) ?? { row: { portLocode, vesselType, period }, hours: [] };
    group.hours.push(HOURS(call.atd.getTime() - call.ata.getTime()));
    groups.set(key, group);
  }
  return [...groups.values()]
    .map(({ row, hours }) => {
      const sorted = sortNumbers(hours);
      return {
        ...row,
        calls: sorted.length,
        meanHours: round(mean(sorted)),
        medianHours: round(quantile(sorted, 0.5)),
        p90Hours: round(quantile(sorted, 0.9)),
      };
    })
    .sort((a, b) =>
      `${a.period}|${a.portLocode}|${a.vesselType}`.localeCompare(
        `${b.period}|${b.portLocode}|${b.vesselType}`,
      ),
    );
}

export interface BunkerVolumeRow {
  month: string;
  portLocode: string;
  fuelType: string;
  unit: string;
  quantity: number;
  deliveries: number;
}

/** A completed bunkering order as the fuel reports read it (its details hold the delivery). */
export interface BunkerDelivery {
  portCallId: string;
  completedAt: Date;
  fuelType: string;
  unit: string;
  quantity: number;
}

/** The account's bunkering orders completed in [from, to), one statement, read as plain rows. */
export async function completedBunkering(
  em: EntityManager,
  principal: Principal,
  from: Date,
  to: Date,
): Promise<BunkerDelivery[]> {
  const orders = await findPlain(
    em,
    ServiceOrder,
    {
      ...tenant(principal),
      serviceType: ServiceType.BUNKERING,
      status: ServiceOrderStatus.COMPLETED,
      completedAt: { $gte: from, $lt: to },
    },
    { fields: ['portCallId', 'details', 'completedAt'] },
  );
  return orders.map((order) => {
    const { fuelType, unit, quantity } = order.details as Omit<BunkerDelivery, 'portCallId' | 'completedAt'>;
    return { portCallId: order.portCallId, completedAt: order.completedAt!, fuelType, unit, quantity };
  });
}

/**
 * Completed bunkering orders by completion month, port, fuel type and unit (MT and M3 are never
 * added together). A port filter must name a port of the register (else 404, as for forecasts).
 */
export async function bunkerVolumes(
  em: EntityManager,
  principal: Principal,
  window: Window,
  portLocode?: string | null,
  deadline: Deadline = NO_DEADLINE,
): Promise<BunkerVolumeRow[]> {
  await deadline.checkpoint('the bunker volumes report');
  const only = portLocode ? await portByLocode(em, portLocode) : null;
  const orders = await completedBunkering(em, principal, window.from, window.to);
  await deadline.checkpoint('the bunker volumes report');
  const calls = new Map(
    (
      await findPlain(
        em,
        PortCall,
        { id: { $in: [...new Set(orders.map((o) => o.portCallId))] } },
        { fields: ['id', 'portId'] },
      )
    ).map((c) => [c.id, c.portId]),
  );
  const ports = new Map(
    (await findPlain(em, Port, {}, { fields: ['id', 'locode'] })).map((p) => [p.id, p.locode]),
  );
  await deadline.checkpoint('the bunker volumes report');
  const rows = new Map<string, BunkerVolumeRow>();
  for (const order of orders) {
    const locode = ports.get(calls.get(order.portCallId)!)!;
    if (only && locode !== only.locode) continue;
    const month = periodKey(order.completedAt, Period.MONTH)!;
    const { fuelType, unit, quantity } = order;
    const key = `${month}|${locode}|${fuelType}|${unit}`;
    const row = rows.get(key) ?? { month, portLocode: locode, fuelType, unit, quantity: 0, deliveries: 0 };
    row.quantity += quantity;
    row.deliveries += 1;
    rows.set(key, row);
  }
  return [...rows.values()]
    .map((r) => ({ ...r, quantity: round(r.quantity, 3) }))
    .sort((a, b) =>
      `${a.month}|${a.portLocode}|${a.fuelType}`.localeCompare(`${b.month}|${b.portLocode}|${b.fuelType}`),
    );
}

export interface VendorPerformanceRow {
  vendor: Vendor;
  orders: number;
  completed: number;
  onTime: number;
  onTimeRate: number | null;
  cancelled: number;
  cancellationRate: number | null;
}

/**
 * Orders created in the window. On time: completed no later than `requestedFor` + 2 h.
 * Cancellation rate: (CANCELLED + REJECTED) / all orders. Rates are null without orders.
 */
export async function vendorPerformance(
  em: EntityManager,
  principal: Principal,
  window: Window,
  deadline: Deadline = NO_DEADLINE,
): Promise<VendorPerformanceRow[]> {
  await deadline.checkpoint('the vendor performance report');
  const [orders, vendors] = await Promise.all([
    findPlain(
      em,
      ServiceOrder,
      { ...tenant(principal), createdAt: { $gte: window.from, $lt: window.to } },
      { fields: ['vendorId', 'status', 'requestedFor', 'completedAt'] },
    ),
    em.find(Vendor, { ...tenant(principal) }),
  ]);
  await deadline.checkpoint('the vendor performance report');
  const rows = new Map(
    vendors.map((vendor) => [vendor.id, { vendor, orders: 0, completed: 0, onTime: 0, cancelled: 0 }]),
  );
  for (const order of orders) {
    const row = rows.get(order.vendorId);
    if (!row) continue;
    row.orders += 1;
    if (order.status === ServiceOrderStatus.COMPLETED) {
      row.completed += 1;
      if (
        order.completedAt &&
        (!order.requestedFor ||
          order.completedAt.getTime() <= order.requestedFor.getTime() + ON_TIME_GRACE_MS)
      )
        row.onTime += 1;
    }
    if (order.status === ServiceOrderStatus.CANCELLED || order.status === ServiceOrderStatus.REJECTED)
      row.cancelled += 1;
  }
  return [...rows.values()]
    .filter((r) => r.orders > 0)
    .map((r) => ({
      ...r,
      onTimeRate: r.completed ? round(r.onTime / r.completed, 4) : null,
      cancellationRate: r.orders ? round(r.cancelled / r.orders, 4) : null,
    }))
    .sort((a, b) => b.orders - a.orders || a.vendor.name.localeCompare(b.vendor.name));
}

export interface VendorSpendRow {
  vendor: Vendor;
  currency: string;
  invoices: number;
  total: string;
  paid: string;
  outstanding: string;
}

/** Issued and paid invoices (not DRAFT or VOID) by issue date, per vendor and currency; sums in integer cents. */
export async function vendorSpend(
  em: EntityManager,
  principal: Principal,
  window: Window,
  deadline: Deadline = NO_DEADLINE,
): Promise<VendorSpendRow[]> {
  await deadline.checkpoint('the vendor spend report');
  const [invoices, vendors] = await Promise.all([
    findPlain(
      em,
      Invoice,
      {
        ...tenant(principal),
        status: { $in: [InvoiceStatus.ISSUED, InvoiceStatus.PAID] },
        issuedAt: { $gte: window.from, $lt: window.to },
      },
      { fields: ['vendorId', 'currency', 'status', 'total'] },
    ),
    em.find(Vendor, { ...tenant(principal) }),
  ]);
  await deadline.checkpoint('the vendor spend report');
  const byId = new Map(vendors.map((v) => [v.id, v]));
  const rows = new Map<
    string,
    { vendor: Vendor; currency: string; invoices: number; total: bigint; paid: bigint }
  >();
  for (const invoice of invoices) {
    const key = `${invoice.vendorId}|${invoice.currency}`;
    const row = rows.get(key) ?? {
      vendor: byId.get(invoice.vendorId)!,
      currency: invoice.currency,
      invoices: 0,
      total: 0n,
      paid: 0n,
    };
    const amount = cents(invoice.total);
    row.invoices += 1;
    row.total += amount;
    if (invoice.status === InvoiceStatus.PAID) row.paid += amount;
    rows.set(key, row);
  }
  return [...rows.values()]
    .sort((a, b) =>
      b.total > a.total ? 1 : b.total < a.total ? -1 : a.vendor.name.localeCompare(b.vendor.name),
    )
    .map((r) => ({
      vendor: r.vendor,
      currency: r.currency,
      invoices: r.invoices,
      total: formatCents(r.total),
      paid: formatCents(r.paid),
      outstanding: formatCents(r.total - r.paid),
    }));
}
