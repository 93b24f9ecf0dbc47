import type { EntityManager } from '@mikro-orm/knex';
import type { FilterQuery } from '@mikro-orm/core';
import type { Page } from '../gateway/schema/connection.js';
import { isUuid } from '../kernel/ids.js';
import { DAY, isDate } from '../kernel/clock.js';
import { badInput, conflict } from '../kernel/errors.js';
import type { Principal } from '../kernel/principal.js';
import {
  actorOf,
  commit,
  findOwned,
  findPage,
  guardedUpdate,
  illegalMove,
  recordChange,
  tenant,
  uniqueConflict,
  type Deps,
} from './common.js';
import {
  Invoice,
  InvoiceOrderLink,
  InvoiceStatus,
  ServiceOrder,
  ServiceOrderStatus,
  StatusSubject,
  Vendor,
  type InvoiceLine,
} from './entities.js';
import { divRound, formatCents, formatUnits, parseCurrency, parseDecimal } from './money.js';
import { parseDate } from '../kernel/dates.js';
import { parseEnum, requireText } from '../kernel/text.js';

export const INVOICE_TRANSITIONS: Readonly<Record<InvoiceStatus, readonly InvoiceStatus[]>> = {
  DRAFT: [InvoiceStatus.ISSUED, InvoiceStatus.VOID],
  ISSUED: [InvoiceStatus.PAID, InvoiceStatus.VOID],
  PAID: [],
  VOID: [],
};

export interface InvoiceLineInput {
  description: string;
  quantity: string;
  unitPrice: string;
  serviceOrderId?: string | null;
}

export interface InvoiceInput {
  vendorId: string;
  number: string;
  currency: string;
  taxRate?: string | null;
  dueDate: string;
  lines: InvoiceLineInput[];
}

export interface InvoiceTotals {
  lines: InvoiceLine[];
  taxRate: string;
  subtotal: string;
  tax: string;
  total: string;
}

const MAX_LINES = 500;
/**
 * Upper bounds that keep every amount inside its column (money is stored as text of at most 32
 * characters): 500 lines × 10^9 × 10^9 is 5 × 10^20, so with tax up to 100 % a total has at most
 * 22 digits before the decimal point.
 */
const MAX_QUANTITY = 1_000_000_000n;
const MAX_UNIT_PRICE = 1_000_000_000n;

const canonicalQuantity = (units: bigint) => formatUnits(units, 3).replace(/\.?0+$/, '');

/**
 * Line amount = quantity (3 dp) × unit price (2 dp), rounded half-up to cents; tax = subtotal ×
 * rate (percent, 2 dp), rounded once on the subtotal (not per line). All in BigInt.
 */
export function computeTotals(lines: InvoiceLineInput[], taxRateRaw: string): InvoiceTotals {
  if (lines.length === 0) throw badInput('lines', 'an invoice needs at least one line');
  if (lines.length > MAX_LINES) throw badInput('lines', `at most ${MAX_LINES} lines`);
  let subtotal = 0n;
  const computed = lines.map((line, i): InvoiceLine => {
    const quantity = parseDecimal(line.quantity, `lines[${i}].quantity`, 3);
    const price = parseDecimal(line.unitPrice, `lines[${i}].unitPrice`, 2);
    if (quantity.units <= 0n) throw badInput(`lines[${i}].quantity`, 'must be greater than 0');
    if (quantity.units > MAX_QUANTITY * 1000n)
      throw badInput(`lines[${i}].quantity`, `must be at most ${MAX_QUANTITY}`);
    if (price.units < 0n) throw badInput(`lines[${i}].unitPrice`, 'must not be negative');
    if (price.units > MAX_UNIT_PRICE * 100n)
      throw badInput(`lines[${i}].unitPrice`, `must be at most ${MAX_UNIT_PRICE}`);
    const amount = divRound(quantity.units * price.units, 1000n);
    subtotal += amount;
    return {
      description: requireText(line.description, `lines[${i}].description`, 500),
      quantity: canonicalQuantity(quantity.units),
      unitPrice: formatCents(price.units),
      amount: formatCents(amount),
      serviceOrderId: line.serviceOrderId ?? null,
    };
  });
  const rate = parseDecimal(taxRateRaw, 'taxRate', 2);
  if (rate.units < 0n || rate.units > 10000n) throw badInput('taxRate', 'must be a percentage from 0 to 100');
  const tax = divRound(subtotal * rate.units, 10000n);
  return {
    lines: computed,
    taxRate: formatCents(rate.units),
    subtotal: formatCents(subtotal),
    tax: formatCents(tax),
    total: formatCents(subtotal + tax),
  };
}

/**
 * A due date is a calendar date: `YYYY-MM-DD`, or a date-time at exactly 00:00 UTC (what the
 * GraphQL DateTime of earlier clients sends). It may not fall before the invoice date (today, UTC).
 */
export function parseDueDate(raw: string | null | undefined, today: Date): Date {
  const text = raw?.trim();
  if (!text) throw badInput('dueDate', 'is required');
  const dateOnly = /^\d{4}-\d{2}-\d{2}$/.test(text);
  // Not a date: 2030-02-30 (it would roll over), month 13.
  if (dateOnly && !isDate(text))
    throw badInput('dueDate', `must be a calendar date YYYY-MM-DD (got '${text}')`);
  const date = parseDate(dateOnly ? `${text}T00:00:00.000Z` : text, 'dueDate')!;
  if (date.getTime() % DAY !== 0)
    throw badInput(
      'dueDate',
      `must be a calendar date YYYY-MM-DD; a date-time is accepted only at 00:00 UTC (got '${text}')`,
    );
  const invoiceDate = new Date(Math.floor(today.getTime() / DAY) * DAY);
  if (date < invoiceDate)
    throw badInput(
      'dueDate',
      `must not be before the invoice date ${invoiceDate.toISOString().slice(0, 10)} (got ${date.toISOString().slice(0, 10)})`,
    );
  return date;
}

/** The index of `invoice_order_links` and of invoice numbers decide; these name the clash. */
const duplicateOf = (error: unknown, number: string) =>
  uniqueConflict(error, {
    invoice_order_links: () =>
      conflict(
        'A service order on this invoice was billed concurrently by another invoice; reload and retry',
        {
          field: 'lines',
        },
      ),
    number: () => conflict(`Invoice number '${number}' already exists`, { field: 'number' }),
  });

/**
 * Lines may bill only COMPLETED orders of the invoice's vendor, each on at most one invoice that
 * is not VOID (several lines of one invoice may bill the same order, e.g. fuel and barging).
 */
async function checkBilledOrders(
  tx: EntityManager,
  vendor: Vendor,
  lines: readonly InvoiceLine[],
): Promise<string[]> {
  const orderIds = [...new Set(lines.map((l) => l.serviceOrderId).filter((id): id is string => Boolean(id)))];
  if (!orderIds.length) return orderIds;
  const [orders, links] = await Promise.all([
    tx.find(ServiceOrder, { id: { $in: orderIds.filter(isUuid) }, accountId: vendor.accountId }),
    tx.find(InvoiceOrderLink, { serviceOrderId: { $in: orderIds.filter(isUuid) } }),
  ]);
  for (const [i, line] of lines.entries()) {
    if (!line.serviceOrderId) continue;
    const field = `lines[${i}].serviceOrderId`;
    const order = orders.find((o) => o.id === line.serviceOrderId);
    if (!order) throw badInput(field, `service order '${line.serviceOrderId}' was not found`);
    if (order.vendorId !== vendor.id)
      throw badInput(field, `service order ${order.id} was placed with another vendor`);
    if (order.status !== ServiceOrderStatus.COMPLETED)
      throw badInput(
        field,
        `service order ${order.id} is ${order.status}; only COMPLETED orders can be billed`,
        {
          rule: 'ORDER_NOT_COMPLETED',
        },
      );
    const billed = links.find((l) => l.serviceOrderId === order.id);
    if (billed)
      throw conflict(
        `service order ${order.id} is already billed on invoice ${billed.invoiceId}; void that invoice first`,
        { field, invoiceId: billed.invoiceId },
      );
  }
  return orderIds;
}

export async function createInvoice(deps: Deps, principal: Principal, input: InvoiceInput): Promise<Invoice> {
  const number = requireText(input.number, 'number', 64);
  const currency = parseCurrency(input.currency);
  const dueDate = parseDueDate(input.dueDate, deps.clock.now());
  const totals = computeTotals(input.lines ?? [], input.taxRate ?? '0');
  return commit(deps, async (tx) => {
    const vendor = await findOwned(tx, Vendor, 'Vendor', principal, input.vendorId);
    const serviceOrderIds = await checkBilledOrders(tx, vendor, totals.lines);
    const now = deps.clock.now();
    const invoice = tx.create(Invoice, {
      accountId: vendor.accountId,
      vendorId: vendor.id,
      number,
      currency,
      status: InvoiceStatus.DRAFT,
      ...totals,
      serviceOrderIds,
      dueDate,
      createdAt: now,
    });
    // The invoice row first: the link rows refer to it.
    await tx.persist(invoice).flush();
    if (serviceOrderIds.length)
      await tx.insertMany(
        InvoiceOrderLink,
        serviceOrderIds.map((serviceOrderId) => ({ serviceOrderId, invoiceId: invoice.id })),
      );
    await recordChange(
      tx,
      StatusSubject.INVOICE,
      invoice.id,
      null,
      invoice.status,
      now,
      actorOf(principal),
      now,
    );
    return { result: invoice, drafts: [] };
  }).catch((error: unknown) => {
    throw duplicateOf(error, number);
  });
}

export async function transitionInvoice(
  deps: Deps,
  principal: Principal,
  id: string,
  to: InvoiceStatus,
): Promise<Invoice> {
  const target = parseEnum(InvoiceStatus, to, 'status');
  return commit(deps, async (tx) => {
    const invoice = await findOwned(tx, Invoice, 'Invoice', principal, id, { disableIdentityMap: true });
    const from = invoice.status;
    const allowed = INVOICE_TRANSITIONS[from];
    if (!allowed.includes(target)) throw illegalMove('Invoice', from, target, allowed);
    const now = deps.clock.now();
    const values = {
      status: target,
      ...(target === InvoiceStatus.ISSUED ? { issuedAt: now } : {}),
      ...(target === InvoiceStatus.PAID ? { paidAt: now } : {}),
    };
    await guardedUpdate(tx, Invoice, 'Invoice', id, { status: from }, values);
    // A void invoice bills nothing: its orders may go on a corrected invoice.
    if (target === InvoiceStatus.VOID) await tx.nativeDelete(InvoiceOrderLink, { invoiceId: id });
    await recordChange(tx, StatusSubject.INVOICE, id, from, target, now, actorOf(principal), now);
    Object.assign(invoice, values);
    const drafts =
      target === InvoiceStatus.ISSUED
        ? [
            {
              type: 'invoice.issued',
              accountId: invoice.accountId,
              payload: {
                invoiceId: id,
                vendorId: invoice.vendorId,
                total: invoice.total,
                currency: invoice.currency,
                dueDate: invoice.dueDate.toISOString().slice(0, 10),
              },
            },
          ]
        : [];
    return { result: invoice, drafts };
  });
}

export interface InvoiceFilter {
  status?: InvoiceStatus | null;
  vendorId?: string | null;
}

export async function listInvoices(
  em: EntityManager,
  principal: Principal,
  filter: InvoiceFilter,
  page: Page,
) {
  const where: FilterQuery<Invoice> = { ...tenant(principal) };
  if (filter.status) where.status = parseEnum(InvoiceStatus, filter.status, 'status');
  if (filter.vendorId)
    where.vendorId = (await findOwned(em, Vendor, 'Vendor', principal, filter.vendorId)).id;
  return findPage(em, Invoice, where, { createdAt: 'desc', id: 'asc' }, page);
}
