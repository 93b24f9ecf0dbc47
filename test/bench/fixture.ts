/**
 * The mixed bench's fixture: TENANTS accounts (Institutional plan, one API key each), each with its
 * own vendors and CALLS_PER_TENANT port calls of the demo's shared vessels at the demo's ports, with
 * service orders and the status history of both, as the demo seed writes them (bulk inserts through
 * the ORM, so both dialects get the same rows). Calls are spread from 150 days before now to 50 days
 * after: the past ones departed with their orders completed, a few are in port, the planned ones are
 * SCHEDULED with their orders REQUESTED (the pool the bench's transitions confirm, each order once).
 * Deterministic given the clock: a seeded generator chooses everything but the ids.
 */
import { randomUUID } from 'node:crypto';
import type { EntityName } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/knex';
import { createAccount, createApiKey } from '../../src/accounts/service.js';
import { isPostgresUrl } from '../../src/config.js';
import { openAppDatabase } from '../../src/database.js';
import { DAY, HOUR, systemClock } from '../../src/kernel/clock.js';
import { mulberry32 } from '../../src/kernel/random.js';
import {
  Port,
  PortCall,
  PortCallStatus,
  ServiceOrder,
  ServiceOrderStatus,
  ServiceType,
  StatusChange,
  StatusSubject,
  Vendor,
  Vessel,
} from '../../src/port-ops/entities.js';

export const TENANTS = 50;
export const CALLS_PER_TENANT = 200;

export interface Tenant {
  accountId: string;
  apiKey: string;
  /** Planned calls (SCHEDULED, ETA ahead) and the bunkering vendor at each one's port. */
  scheduled: Array<{ callId: string; vendorId: string }>;
  /** REQUESTED orders of planned calls: each may be confirmed once. */
  requested: string[];
}

async function insertBulk<T extends object>(
  em: EntityManager,
  entity: EntityName<T>,
  rows: Array<Partial<T>>,
): Promise<void> {
  // Chunked so a single statement stays under SQLite's bound-parameter limit.
  for (let i = 0; i < rows.length; i += 400) await em.insertMany(entity, rows.slice(i, i + 400) as never);
}

/**
 * Writes the fixture into the database at `url` (already migrated, with the demo's ports and
 * vessels): a tenant per entry of `callCounts`, with that many port calls (TENANTS × CALLS_PER_TENANT
 * unless given), their ETAs spread over the same 200 days whatever their number.
 */
export async function generateFixture(
  url: string,
  callCounts: readonly number[] = new Array<number>(TENANTS).fill(CALLS_PER_TENANT),
): Promise<Tenant[]> {
  const db = await openAppDatabase(url);
  try {
    const em = db.em();
    const ports = await em.find(Port, {}, { orderBy: { locode: 'asc' } });
    const vessels = await em.find(Vessel, {}, { orderBy: { imo: 'asc' } });
    if (ports.length === 0 || vessels.length === 0)
      throw new Error('fixture: the demo ports and vessels are missing');
    const random = mulberry32(20261128);
    const between = (lo: number, hi: number) => lo + (hi - lo) * random();
    const nowMs = systemClock.now().getTime();
    const hour = (ms: number) => new Date(Math.round(ms / HOUR) * HOUR);
    const tenants: Tenant[] = [];
    for (let t = 0; t < callCounts.length; t++) {
      const callCount = callCounts[t]!;
      const { accountId, apiKey } = await em.fork().transactional(async (tx) => {
        const account = await createAccount(
          { em: tx, clock: systemClock },
          { name: `Bench tenant ${t + 1}`, plan: 'INSTITUTIONAL' },
        );
        const { secret } = await createApiKey(
          { em: tx, clock: systemClock },
          { maxActiveKeys: 10, rotationGraceMs: 0 },
          { accountId: account.id, name: 'bench key' },
        );
        return { accountId: account.id, apiKey: secret };
      });
      const vendors: Vendor[] = [];
      const bunkering = new Map<string, string>();
      const marine = new Map<string, string>();
      for (const port of ports) {
        for (const [services, map, role] of [
          [[ServiceType.BUNKERING], bunkering, 'Bunkering'],
          [[ServiceType.PILOTAGE, ServiceType.TOWAGE, ServiceType.MOORING], marine, 'Marine Services'],
        ] as const) {
          const id = randomUUID();
          map.set(port.locode, id);
          vendors.push({
            id,
            accountId,
            name: `Tenant ${t + 1} ${role} ${port.name}`,
            services: [...services],
            ports: [port.locode],
            contactEmail: `ops-${t + 1}@${port.locode.toLowerCase()}.example`,
            contactPhone: null,
            active: true,
            createdAt: new Date(nowMs - 400 * DAY),
          });
        }
      }
      const calls: PortCall[] = [];
      const orders: ServiceOrder[] = [];
      const changes: StatusChange[] = [];
      const change = (
        subjectType: StatusSubject,
        subjectId: string,
        from: string | null,
        to: string,
        at: Date,
      ) =>
        changes.push({
          id: randomUUID(),
          subjectType,
          subjectId,
          from,
          to,
          at,
          actor: 'system',
          recordedAt: at,
        });
      const tenant: Tenant = { accountId, apiKey, scheduled: [], requested: [] };
      for (let c = 0; c < callCount; c++) {
        const port = ports[Math.floor(random() * ports.length)]!;
        const vessel = vessels[Math.floor(random() * vessels.length)]!;
        const eta = hour(nowMs + (-150 + (200 * c) / callCount + between(-0.5, 0.5)) * DAY);
        const etb = hour(eta.getTime() + between(2, 12) * HOUR);
        const etd = hour(etb.getTime() + between(14, 60) * HOUR);
        const createdAt = new Date(Math.min(eta.getTime() - 14 * DAY, nowMs - HOUR));
        const call: PortCall = {
          id: randomUUID(),
          accountId,
          vesselId: vessel.id,
          portId: port.id,
          voyageReference: `T${t + 1}-${String(c + 1).padStart(3, '0')}`,
          agent: `Agency ${port.name}`,
          status: PortCallStatus.SCHEDULED,
          eta,
          etb,
          etd,
          ata: null,
          atb: null,
          atd: null,
          createdAt,
          updatedAt: createdAt,
        };
        change(StatusSubject.PORT_CALL, call.id, null, PortCallStatus.SCHEDULED, createdAt);
        let from: PortCallStatus = PortCallStatus.SCHEDULED;
        for (const [status, at, field] of [
          [PortCallStatus.ARRIVED, eta, 'ata'],
          [PortCallStatus.BERTHED, etb, 'atb'],
          [PortCallStatus.DEPARTED, etd, 'atd'],
        ] as const) {
          if (at.getTime() > nowMs) break;
          call[field] = at;
          call.status = status;
          call.updatedAt = at;
          change(StatusSubject.PORT_CALL, call.id, from, status, at);
          from = status;
        }
        calls.push(call);
        const wanted: Array<[ServiceType, string, Record<string, unknown>]> = [
          [
            ServiceType.BUNKERING,
            bunkering.get(port.locode)!,
            { quantity: Math.round(between(150, 1800)), unit: 'MT', fuelType: 'VLSFO' },
          ],
        ];
        if (random() < 0.6)
          wanted.push([ServiceType.PILOTAGE, marine.get(port.locode)!, { movement: 'INBOUND' }]);
        for (const [serviceType, vendorId, details] of wanted) {
          const orderedAt = new Date(Math.min(createdAt.getTime() + DAY, nowMs - HOUR));
          const done = call.status === PortCallStatus.DEPARTED;
          const order: ServiceOrder = {
            id: randomUUID(),
            accountId,
            portCallId: call.id,
            vendorId,
            serviceType,
            details,
            status: done ? ServiceOrderStatus.COMPLETED : ServiceOrderStatus.REQUESTED,
            requestedFor: etb,
            completedAt: done ? etd : null,
            createdAt: orderedAt,
            updatedAt: done ? etd : orderedAt,
          };
          change(StatusSubject.SERVICE_ORDER, order.id, null, ServiceOrderStatus.REQUESTED, orderedAt);
          if (done) {
            let prev: ServiceOrderStatus = ServiceOrderStatus.REQUESTED;
            for (const status of [
              ServiceOrderStatus.CONFIRMED,
              ServiceOrderStatus.IN_PROGRESS,
              ServiceOrderStatus.COMPLETED,
            ]) {
              change(
                StatusSubject.SERVICE_ORDER,
                order.id,
                prev,
                status,
                status === ServiceOrderStatus.COMPLETED ? etd : etb,
              );
              prev = status;
            }
          }
          orders.push(order);
          if (call.status === PortCallStatus.SCHEDULED) tenant.requested.push(order.id);
        }
        if (call.status === PortCallStatus.SCHEDULED)
          tenant.scheduled.push({ callId: call.id, vendorId: bunkering.get(port.locode)! });
      }
      await em.fork().transactional(async (tx) => {
        await insertBulk(tx, Vendor, vendors);
        await insertBulk(tx, PortCall, calls);
        await insertBulk(tx, ServiceOrder, orders);
        await insertBulk(tx, StatusChange, changes);
      });
      tenants.push(tenant);
    }
    // A production database grows a little at a time and autovacuum keeps PostgreSQL's statistics
    // current; tables loaded in one go have none until its next run, and the planner then scans a
    // never-analyzed table whole for a read of 50 calls' orders (about 20 ms each). SQLite's
    // planner reads no statistics unless a database has been analyzed, which the gateway's are not.
    if (isPostgresUrl(url)) await em.getConnection().execute('analyze');
    return tenants;
  } finally {
    await db.close();
  }
}
