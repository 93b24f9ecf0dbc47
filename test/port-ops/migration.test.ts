import { randomUUID } from 'node:crypto';
import { expect, it } from 'vitest';
import { Account } from '../../src/accounts/entities.js';
import { MIGRATIONS } from '../../src/db/migrations/index.js';
import { Plan } from '../../src/kernel/plans.js';
import {
  Invoice,
  InvoiceOrderLink,
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
} from '../../src/port-ops/entities.js';
import { openEmptyDatabase } from '../helpers/db.js';
import { describeEachDialect } from '../helpers/env.js';

const MINE = 'Migration20261123000700PortOpsIntegrity';

describeEachDialect('port-ops integrity migration', (dialect) => {
  // Stored order matters on SQLite, which reads a table in rowid (insertion) order: the earliest
  // invoice must win even when a later-dated one was stored first.
  it.each([
    ['stored in date order', false],
    ['the later-dated invoice stored first', true],
  ])(
    'links the orders of existing non-VOID invoices; an order billed twice keeps its earliest invoice (%s)',
    async (_, laterFirst) => {
      const { db, drop } = await openEmptyDatabase(dialect);
      try {
        const previous = MIGRATIONS[MIGRATIONS.findIndex((m) => m.name === MINE) - 1]!.name;
        await db.orm.getMigrator().up({ to: previous });
        const em = db.em();
        const at = (day: number) => new Date(Date.UTC(2025, 0, day));
        const account = em.create(Account, { name: 'Old data', plan: Plan.INSTITUTIONAL, createdAt: at(1) });
        const vessel = em.create(Vessel, {
          imo: '9074729',
          name: 'Northern Tern',
          flag: 'SG',
          type: VesselType.TANKER,
          grossTonnage: 1,
          deadweight: 1,
          yearBuilt: 2009,
          createdAt: at(1),
        });
        const port = em.create(Port, {
          locode: 'SGSIN',
          name: 'Singapore',
          country: 'SG',
          timeZone: 'Asia/Singapore',
          createdAt: at(1),
        });
        const common = { accountId: account.id, createdAt: at(2) };
        const vendor = em.create(Vendor, {
          ...common,
          name: 'V',
          services: [ServiceType.BUNKERING],
          ports: ['SGSIN'],
          active: true,
        });
        const call = em.create(PortCall, {
          ...common,
          vesselId: vessel.id,
          portId: port.id,
          voyageReference: 'OLD-1',
          status: PortCallStatus.DEPARTED,
          eta: at(2),
          updatedAt: at(2),
        });
        const order = () =>
          em.create(ServiceOrder, {
            ...common,
            portCallId: call.id,
            vendorId: vendor.id,
            serviceType: ServiceType.BUNKERING,
            details: {},
            status: ServiceOrderStatus.COMPLETED,
            updatedAt: at(2),
          });
        const [o1, o2, o3] = [order(), order(), order()];
        const invoice = (number: string, day: number, status: InvoiceStatus, ids: string[]) =>
          em.create(Invoice, {
            ...common,
            id: randomUUID(),
            vendorId: vendor.id,
            number,
            status,
            currency: 'USD',
            lines: [],
            serviceOrderIds: ids,
            taxRate: '0.00',
            subtotal: '1.00',
            tax: '0.00',
            total: '1.00',
            dueDate: at(30),
            createdAt: at(day),
          });
        const first = invoice('A', 3, InvoiceStatus.PAID, [o1!.id, o2!.id]);
        const twice = invoice('B', 4, InvoiceStatus.ISSUED, [o2!.id]);
        const voided = invoice('C', 5, InvoiceStatus.VOID, [o3!.id]);
        // Nothing persists on create (persistOnCreate is off); parents first, as foreign keys need.
        const stages: object[][] = [
          [account, vessel, port],
          [vendor, call],
          [o1!, o2!, o3!],
          ...(laterFirst ? [[twice], [first, voided]] : [[first, twice, voided]]),
        ];
        for (const rows of stages) await em.persist(rows).flush();

        await db.migrate();
        const links = await db.em().find(InvoiceOrderLink, {}, { orderBy: { invoiceId: 'asc' } });
        expect(Object.fromEntries(links.map((l) => [l.serviceOrderId, l.invoiceId]))).toEqual({
          [o1!.id]: first.id,
          [o2!.id]: first.id,
        });
      } finally {
        await drop();
      }
    },
  );
});
