import type { EntityManager } from '@mikro-orm/knex';
import type { FilterQuery } from '@mikro-orm/core';
import type { Page } from '../gateway/connection.js';
import { badInput, conflict } from '../kernel/errors.js';
import type { Principal } from '../kernel/principal.js';
import { stageEvents } from '../events/stage.js';
import { actorOf, findOwned, findPage, tenant, type Deps } from './common.js';
import {
  Invoice,
  InvoiceStatus,
  ServiceOrder,
  StatusChange,
  StatusSubject,
  Vendor,
  type InvoiceLine,
} from './entities.js';
import { divRound, formatCents, parseCurrency, parseDecimal } from './money.js';
import { parseDate, parseEnum, requireText } from './validation.js';

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
  dueDate: Date | string;
  lines: InvoiceLineInput[];
}

export interface InvoiceTotals {
  lines: InvoiceLine[];
  taxRate: string;
  subtotal: string;
  tax: string;
  total: string;
}

/**
 * Line amount = quantity (3 dp) × unit price (2 dp), rounded half-up to cents; tax = subtotal ×
 * rate (percent, 2 dp), rounded once on the subtotal (not per line). All in BigInt.
 */
export function computeTotals(lines: InvoiceLineInput[], taxRateRaw: string): InvoiceTotals {
  if (lines.length === 0) throw badInput('lines', 'an invoice needs at least one line');
  if (lines.length > 500) throw badInput('lines', 'at most 500 lines');
  let subtotal = 0n;
  const computed = lines.map((line, i): InvoiceLine => {
    const quantity = parseDecimal(line.quantity, `lines[${i}].quantity`, 3);
    const price = parseDecimal(line.unitPrice, `lines[${i}].unitPrice`, 2);
    if (quantity.units <= 0n) throw badInput(`lines[${i}].quantity`, 'must be greater than 0');
    if (price.units < 0n) throw badInput(`lines[${i}].unitPrice`, 'must not be negative');
    const amount = divRound(quantity.units * price.units, 1000n);
    subtotal += amount;
    return {
      description: requireText(line.description, `lines[${i}].description`, 500),
      quantity: String(line.quantity).trim(),
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

export async function createInvoice(deps: Deps, principal: Principal, input: InvoiceInput): Promise<Invoice> {
  const number = requireText(input.number, 'number', 64);
  const currency = parseCurrency(input.currency);
  const dueDate = parseDate(input.dueDate, 'dueDate');
  if (!dueDate) throw badInput('dueDate', 'is required');
  const totals = computeTotals(input.lines ?? [], input.taxRate ?? '0');
  const vendor = await findOwned(deps.em, Vendor, 'Vendor', principal, input.vendorId);
  const orderIds = [
    ...new Set(totals.lines.map((l) => l.serviceOrderId).filter((id): id is string => Boolean(id))),
  ];
  if (orderIds.length) {
    const orders = await deps.em.find(ServiceOrder, { id: { $in: orderIds }, accountId: vendor.accountId });
    for (const [i, line] of totals.lines.entries()) {
      if (!line.serviceOrderId) continue;
      const order = orders.find((o) => o.id === line.serviceOrderId);
      if (!order)
        throw badInput(`lines[${i}].serviceOrderId`, `service order '${line.serviceOrderId}' was not found`);
      if (order.vendorId !== vendor.id)
        throw badInput(
          `lines[${i}].serviceOrderId`,
          `service order ${order.id} was placed with another vendor`,
        );
    }
  }
  if (await deps.em.count(Invoice, { accountId: vendor.accountId, number })) {
    throw conflict(`Invoice number '${number}' already exists`, { field: 'number' });
  }
  const invoice = deps.em.create(Invoice, {
    accountId: vendor.accountId,
    vendorId: vendor.id,
    number,
    currency,
    status: InvoiceStatus.DRAFT,
    ...totals,
    serviceOrderIds: orderIds,
    dueDate,
    createdAt: deps.clock.now(),
  });
  const now = deps.clock.now();
  await deps.em.transactional(async (tx) => {
    tx.persist(invoice);
    tx.persist(
      tx.create(StatusChange, {
        subjectType: StatusSubject.INVOICE,
        subjectId: invoice.id,
        from: null,
        to: invoice.status,
        at: now,
        actor: actorOf(principal),
        recordedAt: now,
      }),
    );
  });
  return invoice;
}

export async function transitionInvoice(
  deps: Deps,
  principal: Principal,
  id: string,
  to: InvoiceStatus,
): Promise<Invoice> {
  const target = parseEnum(InvoiceStatus, to, 'status');
  const invoice = await findOwned(deps.em, Invoice, 'Invoice', principal, id);
  const from = invoice.status;
  const allowed = INVOICE_TRANSITIONS[from];
  if (!allowed.includes(target)) {
    throw conflict(
      `Invoice cannot go from ${from} to ${target}${allowed.length ? ` (from ${from} it may go to ${allowed.join(' or ')})` : ` (${from} is final)`}`,
      {
        from,
        to: target,
        allowed,
      },
    );
  }
  let result = invoice;
  const events = await deps.em.transactional(async (tx) => {
    const now = deps.clock.now();
    const managed = tx.merge(invoice);
    result = managed;
    managed.status = target;
    if (target === InvoiceStatus.ISSUED) managed.issuedAt = now;
    if (target === InvoiceStatus.PAID) managed.paidAt = now;
    tx.persist(
      tx.create(StatusChange, {
        subjectType: StatusSubject.INVOICE,
        subjectId: id,
        from,
        to: target,
        at: now,
        actor: actorOf(principal),
        recordedAt: now,
      }),
    );
    if (target !== InvoiceStatus.ISSUED) return [];
    return stageEvents(tx, deps.clock, [
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
    ]);
  });
  await deps.events.publish(events);
  return result;
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
