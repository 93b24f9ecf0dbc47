import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/kernel/clock.js';
import {
  Invoice,
  InvoiceOrderLink,
  Port,
  PortCall,
  ServiceOrder,
  StatusChange,
  Vendor,
  Vessel,
} from '../../src/port-ops/entities.js';
import { parseImo, parseLocode } from '../../src/port-ops/validation.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

const NOW = '2026-05-20T09:41:07.123Z';

/** Record times that must not lie after the clock; planned times (ETA/ETB/ETD, requestedFor, dueDate) may. */
const RECORDED = {
  PortCall: ['createdAt', 'updatedAt', 'ata', 'atb', 'atd'],
  ServiceOrder: ['createdAt', 'updatedAt', 'completedAt'],
  StatusChange: ['at', 'recordedAt'],
  Invoice: ['createdAt', 'issuedAt', 'paidAt'],
  Vendor: ['createdAt'],
  Vessel: ['createdAt'],
  Port: ['createdAt'],
} as const;
const ENTITIES = { PortCall, ServiceOrder, StatusChange, Invoice, Vendor, Vessel, Port };

describe('demo port-ops data', () => {
  let first: TestServer;
  let second: TestServer;
  beforeAll(async () => {
    first = await startTestServer({ clock: new ManualClock(NOW), seed: 'afresh' });
    second = await startTestServer({ clock: new ManualClock(NOW), seed: 'afresh' });
  });
  afterAll(async () => {
    await first?.close();
    await second?.close();
  });

  it('dates nothing after the clock except planned times', async () => {
    const em = first.database.db.em();
    const now = new Date(NOW).getTime();
    const late: string[] = [];
    for (const [name, fields] of Object.entries(RECORDED)) {
      const rows = (await em.find(ENTITIES[name as keyof typeof ENTITIES] as never, {})) as Array<
        Record<string, unknown>
      >;
      expect(rows.length, name).toBeGreaterThan(0);
      for (const field of fields) {
        const count = rows.filter(
          (r) => r[field] instanceof Date && (r[field] as Date).getTime() > now,
        ).length;
        if (count) late.push(`${name}.${field}: ${count}`);
      }
    }
    expect(late).toEqual([]);
    // Planned times do run ahead: the demo has calls scheduled for the coming month.
    expect(await em.count(PortCall, { eta: { $gt: new Date(NOW) } })).toBeGreaterThan(10);
  });

  it('keeps each record’s history in order: created ≤ every transition ≤ updated', async () => {
    const em = first.database.db.em();
    const [calls, orders, changes] = await Promise.all([
      em.find(PortCall, {}),
      em.find(ServiceOrder, {}),
      em.find(StatusChange, {}),
    ]);
    const bySubject = new Map<string, StatusChange[]>();
    for (const c of changes) bySubject.set(c.subjectId, [...(bySubject.get(c.subjectId) ?? []), c]);
    const broken: string[] = [];
    for (const row of [...calls, ...orders]) {
      const history = (bySubject.get(row.id) ?? []).sort((a, b) => a.at.getTime() - b.at.getTime());
      if (history[0]?.from !== null || history[0]?.at.getTime() !== row.createdAt.getTime())
        broken.push(`${row.id}: first change`);
      if (history.at(-1)?.to !== row.status) broken.push(`${row.id}: last change is not its status`);
      if (history.at(-1)!.at.getTime() !== row.updatedAt.getTime()) broken.push(`${row.id}: updatedAt`);
    }
    expect(broken.slice(0, 5)).toEqual([]);
  });

  it('bills each completed order on exactly one invoice, and links every billed order', async () => {
    const em = first.database.db.em();
    const [invoices, links] = await Promise.all([em.find(Invoice, {}), em.find(InvoiceOrderLink, {})]);
    const billed = invoices.flatMap((i) => i.serviceOrderIds);
    expect(new Set(billed).size).toBe(billed.length);
    expect(links.map((l) => l.serviceOrderId).sort()).toEqual([...billed].sort());
    const orders = await em.find(ServiceOrder, { id: { $in: billed } });
    expect(orders.every((o) => o.status === 'COMPLETED')).toBe(true);
  });

  it('uses real UN/LOCODEs and IMO numbers with valid check digits', async () => {
    const em = first.database.db.em();
    const ports = await em.find(Port, {});
    expect(ports.map((p) => p.locode).sort()).toEqual(
      ['AEFJR', 'BEANR', 'CNSHA', 'ESALG', 'KRPUS', 'NLRTM', 'SGSIN', 'USHOU'].sort(),
    );
    for (const p of ports) expect(parseLocode(p.locode)).toBe(p.locode);
    for (const v of await em.find(Vessel, {})) expect(parseImo(v.imo)).toBe(v.imo);
  });

  it('is the same rows with the same ids on every run with the same clock', async () => {
    const dump = async (server: TestServer) => {
      const connection = server.database.db.em().getConnection();
      const out: Record<string, unknown> = {};
      for (const table of [
        'ports',
        'vessels',
        'vendors',
        'port_calls',
        'service_orders',
        'status_changes',
        'invoices',
        'invoice_order_links',
      ]) {
        // The owning account is made by the foundation seed with a random id; everything else is ours.
        const rows = await connection.execute(`select * from ${table} order by 1`);
        out[table] = rows.map(({ account_id: _, ...row }: Record<string, unknown>) => row);
      }
      return out;
    };
    const [a, b] = await Promise.all([dump(first), dump(second)]);
    expect((a.port_calls as unknown[]).length).toBeGreaterThan(1000);
    expect(a).toEqual(b);
  });
});
