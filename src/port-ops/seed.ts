import type { EntityManager } from '@mikro-orm/knex';
import type { EntityName } from '@mikro-orm/core';
import { Account } from '../accounts/entities.js';
import { DAY, HOUR, type Clock } from '../kernel/clock.js';
import { mulberry32, seededUuid } from '../kernel/random.js';
import {
  FuelType,
  Invoice,
  InvoiceOrderLink,
  InvoiceStatus,
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
  VesselType,
  type InvoiceLine,
} from './entities.js';
import { computeTotals } from './invoices.js';
import type { ServiceDeps } from '../kernel/deps.js';

/** The account that owns the demo port-ops history: the one that also holds the admin user. */
export const DEMO_PORT_OPS_ACCOUNT = 'Demo Institutional';

/** Real UN/LOCODEs; names as in the code list. */
export const DEMO_PORTS: Array<Pick<Port, 'locode' | 'name' | 'timeZone'> & { congestionHours: number }> = [
  { locode: 'SGSIN', name: 'Singapore', timeZone: 'Asia/Singapore', congestionHours: 10 },
  { locode: 'NLRTM', name: 'Rotterdam', timeZone: 'Europe/Amsterdam', congestionHours: 6 },
  { locode: 'USHOU', name: 'Houston', timeZone: 'America/Chicago', congestionHours: 14 },
  { locode: 'AEFJR', name: 'Fujairah', timeZone: 'Asia/Dubai', congestionHours: 8 },
  { locode: 'CNSHA', name: 'Shanghai', timeZone: 'Asia/Shanghai', congestionHours: 18 },
  { locode: 'BEANR', name: 'Antwerp', timeZone: 'Europe/Brussels', congestionHours: 7 },
  { locode: 'KRPUS', name: 'Busan', timeZone: 'Asia/Seoul', congestionHours: 5 },
  { locode: 'ESALG', name: 'Algeciras', timeZone: 'Europe/Madrid', congestionHours: 4 },
];

/** Fictional vessels with valid IMO check digits; more are generated from the seeded PRNG. */
export const DEMO_VESSELS: Array<Omit<Vessel, 'id' | 'createdAt'>> = [
  {
    imo: '9074729',
    name: 'Northern Tern',
    flag: 'SG',
    type: VesselType.TANKER,
    grossTonnage: 57_164,
    deadweight: 105_400,
    yearBuilt: 2009,
  },
  {
    imo: '9321483',
    name: 'Harbour Lark',
    flag: 'LR',
    type: VesselType.CONTAINER_SHIP,
    grossTonnage: 94_511,
    deadweight: 108_000,
    yearBuilt: 2014,
  },
  {
    imo: '9500015',
    name: 'Coral Meridian',
    flag: 'MH',
    type: VesselType.BULK_CARRIER,
    grossTonnage: 43_012,
    deadweight: 81_600,
    yearBuilt: 2016,
  },
];

export function imoWithCheckDigit(six: string): string {
  const sum = [...six].reduce((acc, d, i) => acc + Number(d) * (7 - i), 0);
  return `${six}${sum % 10}`;
}

const NAME_A = [
  'Amber',
  'Silver',
  'Eastern',
  'Western',
  'Polar',
  'Ocean',
  'Golden',
  'Morning',
  'Stellar',
  'Blue',
  'Cape',
  'Pacific',
  'Atlantic',
];
const NAME_B = [
  'Heron',
  'Petrel',
  'Gannet',
  'Albatross',
  'Kestrel',
  'Osprey',
  'Plover',
  'Curlew',
  'Shearwater',
  'Skua',
  'Fulmar',
  'Puffin',
];
const FLAGS = ['SG', 'LR', 'MH', 'PA', 'MT', 'BS', 'GR', 'NO', 'HK', 'CY'];
const TYPES: Array<{
  type: VesselType;
  gt: [number, number];
  dwtPerGt: number;
  berthHours: [number, number];
}> = [
  { type: VesselType.TANKER, gt: [25_000, 160_000], dwtPerGt: 1.85, berthHours: [24, 48] },
  { type: VesselType.CONTAINER_SHIP, gt: [30_000, 220_000], dwtPerGt: 1.1, berthHours: [14, 36] },
  { type: VesselType.BULK_CARRIER, gt: [20_000, 100_000], dwtPerGt: 1.8, berthHours: [40, 96] },
  { type: VesselType.LNG_CARRIER, gt: [90_000, 120_000], dwtPerGt: 0.8, berthHours: [20, 30] },
  { type: VesselType.CHEMICAL_TANKER, gt: [8_000, 30_000], dwtPerGt: 1.6, berthHours: [20, 44] },
];
const FUELS: FuelType[] = [
  FuelType.VLSFO,
  FuelType.VLSFO,
  FuelType.VLSFO,
  FuelType.HSFO,
  FuelType.MGO,
  FuelType.LSMGO,
  FuelType.B24,
  FuelType.LNG,
];
/** USD per MT, a rough level per fuel; monthly noise is added. */
const FUEL_PRICE: Record<string, number> = {
  VLSFO: 620,
  HSFO: 470,
  ULSFO: 660,
  MGO: 790,
  LSMGO: 800,
  LNG: 700,
  B24: 720,
  B30: 760,
  B100: 1100,
};
const SERVICE_FEE: Partial<Record<ServiceType, [number, number]>> = {
  PILOTAGE: [1_800, 6_500],
  TOWAGE: [3_500, 14_000],
  MOORING: [900, 2_800],
  FRESH_WATER: [600, 3_000],
  PROVISIONS: [2_000, 12_000],
  WASTE_REMOVAL: [700, 4_000],
  CREW_CHANGE: [1_500, 7_000],
  REPAIRS: [5_000, 40_000],
  SURVEY: [2_500, 9_000],
};

const VENDOR_ROLES: Array<{ suffix: string; services: ServiceType[] }> = [
  { suffix: 'Bunkering', services: [ServiceType.BUNKERING] },
  { suffix: 'Marine Services', services: [ServiceType.PILOTAGE, ServiceType.TOWAGE, ServiceType.MOORING] },
  {
    suffix: 'Ship Supply',
    services: [ServiceType.FRESH_WATER, ServiceType.PROVISIONS, ServiceType.WASTE_REMOVAL],
  },
  { suffix: 'Technical', services: [ServiceType.CREW_CHANGE, ServiceType.REPAIRS, ServiceType.SURVEY] },
];
const VENDOR_NAMES = [
  'Tidewater',
  'Seabright',
  'Keelstone',
  'Harbourline',
  'Bluefin',
  'Windward',
  'Capstan',
  'Leeway',
];

async function insertBulk<T extends object>(
  em: EntityManager,
  entity: EntityName<T>,
  rows: Array<Partial<T>>,
): Promise<void> {
  // Chunked so a single statement stays under SQLite's bound-parameter limit.
  for (let i = 0; i < rows.length; i += 400) await em.insertMany(entity, rows.slice(i, i + 400) as never);
}

/** Seeds of the demo data and of its ids: two streams, so ids never shift the generated history. */
const DATA_SEED = 20261122;
const ID_SEED = 20261123;

/**
 * Deterministic demo port operations: shared ports and vessels, and for the Institutional
 * account vendors, ~2 years of port calls (with ATA/ATB/ATD and status history), service
 * orders and monthly vendor invoices, with calls planned up to a month ahead of the clock.
 * Given the same clock, every run produces the same rows and ids. Nothing is dated after the
 * clock except planned times (ETA/ETB/ETD, requestedFor, due dates). Bulk inserts only.
 */
export async function seedPortOpsDemo(em: EntityManager, services: { clock: Clock }): Promise<void> {
  const random = mulberry32(DATA_SEED);
  const idStream = mulberry32(ID_SEED);
  const newId = () => seededUuid(idStream);
  const between = (lo: number, hi: number) => lo + (hi - lo) * random();
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
  const now = services.clock.now();
  const nowMs = now.getTime();
  /** A record time: `ms` if it has passed, else a time between `floor` and now (when it would have been recorded). */
  const past = (ms: number, floor: number) => new Date(ms <= nowMs ? ms : floor + (nowMs - floor) * random());

  const ports = DEMO_PORTS.map(({ congestionHours: _, ...p }) => ({
    id: newId(),
    ...p,
    country: p.locode.slice(0, 2),
    createdAt: now,
  }));
  await insertBulk(em, Port, ports);

  const vessels: Vessel[] = DEMO_VESSELS.map((v) => ({ ...v, id: newId(), createdAt: now }));
  const usedImos = new Set(vessels.map((v) => v.imo));
  while (vessels.length < 36) {
    const imo = imoWithCheckDigit(String(Math.floor(between(910_000, 990_000))));
    if (usedImos.has(imo)) continue;
    usedImos.add(imo);
    const spec = pick(TYPES);
    const grossTonnage = Math.round(between(...spec.gt));
    vessels.push({
      id: newId(),
      imo,
      name: `${pick(NAME_A)} ${pick(NAME_B)}`,
      flag: pick(FLAGS),
      type: spec.type,
      grossTonnage,
      deadweight: Math.round(grossTonnage * spec.dwtPerGt),
      yearBuilt: Math.floor(between(2005, 2024)),
      createdAt: now,
    });
  }
  await insertBulk(em, Vessel, vessels);

  const account = await em.findOne(Account, { name: DEMO_PORT_OPS_ACCOUNT });
  if (!account) return;
  const accountId = account.id;

  // Every port has one vendor of each role; bunker suppliers also serve a neighbouring port.
  const vendors: Array<Vendor & { reliability: number }> = [];
  DEMO_PORTS.forEach((port, p) => {
    VENDOR_ROLES.forEach((role, r) => {
      const extra =
        role.services[0] === ServiceType.BUNKERING ? [DEMO_PORTS[(p + 1) % DEMO_PORTS.length]!.locode] : [];
      vendors.push({
        id: newId(),
        accountId,
        name: `${VENDOR_NAMES[(p + r) % VENDOR_NAMES.length]} ${role.suffix} ${port.name}`,
        services: role.services,
        ports: [port.locode, ...extra],
        contactEmail: `ops@${VENDOR_NAMES[(p + r) % VENDOR_NAMES.length]!.toLowerCase()}-${port.locode.toLowerCase()}.example`,
        contactPhone: null,
        active: true,
        createdAt: new Date(nowMs - 800 * DAY),
        reliability: between(0.7, 0.97),
      });
    });
  });
  await insertBulk(
    em,
    Vendor,
    vendors.map(({ reliability: _, ...v }) => v),
  );
  const vendorFor = (locode: string, service: ServiceType) =>
    vendors.filter((v) => v.ports.includes(locode) && v.services.includes(service));

  const calls: PortCall[] = [];
  const orders: ServiceOrder[] = [];
  const changes: StatusChange[] = [];
  const change = (subjectType: StatusSubject, subjectId: string, from: string | null, to: string, at: Date) =>
    changes.push({ id: newId(), subjectType, subjectId, from, to, at, actor: 'system', recordedAt: at });
  const hour = (ms: number) => new Date(Math.round(ms / HOUR) * HOUR);
  const start = nowMs - 730 * DAY;

  vessels.forEach((vessel, v) => {
    const spec = TYPES.find((t) => t.type === vessel.type)!;
    let t = start + between(0, 20) * DAY;
    let seq = 1;
    while (t < nowMs + 30 * DAY) {
      const portIndex = Math.floor(random() * ports.length);
      const port = ports[portIndex]!;
      const month = new Date(t).getUTCMonth();
      // Northern-winter congestion: berth waits run longer December–February.
      const season = month === 11 || month <= 1 ? 1.4 : 1;
      const eta = hour(t);
      const wait = DEMO_PORTS[portIndex]!.congestionHours * season * between(0.3, 1.8) * HOUR;
      const berth = between(...spec.berthHours) * HOUR;
      const etb = hour(eta.getTime() + DEMO_PORTS[portIndex]!.congestionHours * HOUR);
      const etd = hour(etb.getTime() + (spec.berthHours[0] + spec.berthHours[1]) * 0.5 * HOUR);
      const ata = hour(eta.getTime() + between(-4, 8) * HOUR);
      const atb = hour(ata.getTime() + wait);
      const atd = hour(atb.getTime() + berth);
      // Planned two weeks ahead; a call planned less than that ahead of now was entered recently.
      const enteredAt = past(eta.getTime() - 14 * DAY, nowMs - 14 * DAY);
      const call: PortCall = {
        id: newId(),
        accountId,
        vesselId: vessel.id,
        portId: port.id,
        voyageReference: `V${String(v + 1).padStart(2, '0')}-${String(seq++).padStart(3, '0')}`,
        agent: `${pick(['Meridian', 'Anchorpoint', 'Gulfstream', 'Northstar'])} Agency ${port.name}`,
        status: PortCallStatus.SCHEDULED,
        eta,
        etb,
        etd,
        ata: null,
        atb: null,
        atd: null,
        createdAt: enteredAt,
        updatedAt: enteredAt,
      };
      change(StatusSubject.PORT_CALL, call.id, null, PortCallStatus.SCHEDULED, call.createdAt);
      const cancelled = random() < 0.04;
      const cancelledAt = new Date(eta.getTime() - DAY);
      if (cancelled && eta.getTime() < nowMs) {
        call.status = PortCallStatus.CANCELLED;
        call.updatedAt = cancelledAt;
        change(
          StatusSubject.PORT_CALL,
          call.id,
          PortCallStatus.SCHEDULED,
          PortCallStatus.CANCELLED,
          cancelledAt,
        );
      } else {
        let from = PortCallStatus.SCHEDULED;
        for (const [status, at, field] of [
          [PortCallStatus.ARRIVED, ata, 'ata'],
          [PortCallStatus.BERTHED, atb, 'atb'],
          [PortCallStatus.DEPARTED, atd, 'atd'],
        ] as const) {
          if (at.getTime() > nowMs) break;
          call[field] = at;
          call.status = status;
          call.updatedAt = at;
          change(StatusSubject.PORT_CALL, call.id, from, status, at);
          from = status;
        }
      }
      calls.push(call);

      const wanted: ServiceType[] = [];
      if (random() < 0.65) wanted.push(ServiceType.BUNKERING);
      if (random() < 0.5) wanted.push(ServiceType.PILOTAGE);
      if (random() < 0.3)
        wanted.push(
          pick([
            ServiceType.TOWAGE,
            ServiceType.FRESH_WATER,
            ServiceType.PROVISIONS,
            ServiceType.CREW_CHANGE,
            ServiceType.SURVEY,
          ]),
        );
      for (const serviceType of wanted) {
        const vendor = pick(vendorFor(port.locode, serviceType));
        const details: Record<string, unknown> =
          serviceType === ServiceType.BUNKERING
            ? {
                quantity: Math.round(between(150, vessel.type === VesselType.CONTAINER_SHIP ? 3_500 : 1_800)),
                unit: 'MT',
                fuelType: pick(FUELS),
                deliveryMethod: 'BARGE',
              }
            : serviceType === ServiceType.TOWAGE
              ? { tugs: Math.ceil(between(1, 4)), movement: 'INBOUND' }
              : serviceType === ServiceType.FRESH_WATER
                ? { quantity: Math.round(between(50, 600)), unit: 'MT' }
                : serviceType === ServiceType.PROVISIONS
                  ? { description: 'Fresh provisions and bonded stores' }
                  : serviceType === ServiceType.CREW_CHANGE
                    ? { joining: Math.ceil(between(1, 6)), leaving: Math.ceil(between(1, 6)) }
                    : serviceType === ServiceType.SURVEY
                      ? { surveyType: 'Bunker quantity survey' }
                      : { movement: 'INBOUND' };
        const requestedFor = hour(etb.getTime() + between(0, 12) * HOUR);
        const orderedAt = past(call.createdAt.getTime() + between(1, 7) * DAY, call.createdAt.getTime());
        const order: ServiceOrder = {
          id: newId(),
          accountId,
          portCallId: call.id,
          vendorId: vendor.id,
          serviceType,
          details,
          status: ServiceOrderStatus.REQUESTED,
          requestedFor,
          completedAt: null,
          createdAt: orderedAt,
          updatedAt: orderedAt,
        };
        change(StatusSubject.SERVICE_ORDER, order.id, null, ServiceOrderStatus.REQUESTED, order.createdAt);
        const path: ServiceOrderStatus[] =
          call.status === PortCallStatus.CANCELLED
            ? [ServiceOrderStatus.CANCELLED]
            : random() < 0.03
              ? [ServiceOrderStatus.REJECTED]
              : random() < 0.04
                ? [ServiceOrderStatus.CONFIRMED, ServiceOrderStatus.CANCELLED]
                : [
                    ServiceOrderStatus.CONFIRMED,
                    ServiceOrderStatus.IN_PROGRESS,
                    ServiceOrderStatus.COMPLETED,
                  ];
        const late = random() > vendor.reliability;
        // Each step no earlier than the one before; a cancelled call cancels its orders with it.
        const confirmedAt = order.createdAt.getTime() + DAY;
        const startedAt = Math.max(requestedFor.getTime() - 2 * HOUR, confirmedAt);
        const completedAt = hour(
          Math.max(requestedFor.getTime() + (late ? between(3, 30) : between(-2, 2)) * HOUR, startedAt),
        );
        const times = [confirmedAt, startedAt, completedAt.getTime()];
        let from: ServiceOrderStatus = ServiceOrderStatus.REQUESTED;
        path.forEach((status, i) => {
          const at =
            call.status === PortCallStatus.CANCELLED
              ? cancelledAt.getTime()
              : status === ServiceOrderStatus.CANCELLED || status === ServiceOrderStatus.REJECTED
                ? confirmedAt
                : times[i]!;
          if (at > nowMs) return;
          if (from !== order.status) return;
          order.status = status;
          order.updatedAt = new Date(at);
          if (status === ServiceOrderStatus.COMPLETED) order.completedAt = completedAt;
          change(StatusSubject.SERVICE_ORDER, order.id, from, status, new Date(at));
          from = status;
        });
        orders.push(order);
      }
      t = atd.getTime() + between(6, 22) * DAY;
    }
  });

  // One invoice per vendor and calendar month of completed work; paid after 45 days.
  const byVendorMonth = new Map<string, ServiceOrder[]>();
  for (const order of orders) {
    if (order.status !== ServiceOrderStatus.COMPLETED || !order.completedAt) continue;
    const key = `${order.vendorId}|${order.completedAt.toISOString().slice(0, 7)}`;
    byVendorMonth.set(key, [...(byVendorMonth.get(key) ?? []), order]);
  }
  const invoices: Invoice[] = [];
  const links: InvoiceOrderLink[] = [];
  let number = 1;
  for (const [key, monthOrders] of [...byVendorMonth.entries()].sort(([a], [b]) => a.localeCompare(b))) {
    const [vendorId, month] = key.split('|') as [string, string];
    const monthEnd = new Date(`${month}-01T00:00:00.000Z`);
    monthEnd.setUTCMonth(monthEnd.getUTCMonth() + 1);
    if (monthEnd.getTime() > nowMs) continue;
    const lines = monthOrders.map((o) => {
      if (o.serviceType === ServiceType.BUNKERING) {
        const fuel = String(o.details.fuelType);
        return {
          description: `${fuel} delivered`,
          quantity: String(o.details.quantity),
          unitPrice: (FUEL_PRICE[fuel]! * between(0.9, 1.1)).toFixed(2),
          serviceOrderId: o.id,
        };
      }
      const [lo, hi] = SERVICE_FEE[o.serviceType]!;
      return {
        description: o.serviceType.replace('_', ' ').toLowerCase(),
        quantity: '1',
        unitPrice: between(lo, hi).toFixed(2),
        serviceOrderId: o.id,
      };
    });
    const totals = computeTotals(lines, '0');
    const issuedAt = new Date(monthEnd.getTime() + 2 * DAY);
    const issued = issuedAt.getTime() < nowMs;
    const dueDate = new Date(issuedAt.getTime() + 30 * DAY);
    const paid = dueDate.getTime() + 15 * DAY < nowMs;
    const paidAt = paid ? new Date(dueDate.getTime() - 3 * DAY) : null;
    const invoice: Invoice = {
      id: newId(),
      accountId,
      vendorId,
      number: `INV-${month.replace('-', '')}-${String(number++).padStart(4, '0')}`,
      status: paid ? InvoiceStatus.PAID : issued ? InvoiceStatus.ISSUED : InvoiceStatus.DRAFT,
      currency: 'USD',
      lines: totals.lines as InvoiceLine[],
      serviceOrderIds: monthOrders.map((o) => o.id),
      taxRate: totals.taxRate,
      subtotal: totals.subtotal,
      tax: totals.tax,
      total: totals.total,
      dueDate,
      issuedAt: issued ? issuedAt : null,
      paidAt,
      // Recorded the day after the month closed (or since, if that is still ahead).
      createdAt: past(monthEnd.getTime() + DAY, monthEnd.getTime()),
    };
    invoices.push(invoice);
    links.push(...monthOrders.map((o) => ({ serviceOrderId: o.id, invoiceId: invoice.id })));
    change(StatusSubject.INVOICE, invoice.id, null, InvoiceStatus.DRAFT, invoice.createdAt);
    if (issued)
      change(StatusSubject.INVOICE, invoice.id, InvoiceStatus.DRAFT, InvoiceStatus.ISSUED, issuedAt);
    if (paidAt) change(StatusSubject.INVOICE, invoice.id, InvoiceStatus.ISSUED, InvoiceStatus.PAID, paidAt);
  }

  await insertBulk(em, PortCall, calls);
  await insertBulk(em, ServiceOrder, orders);
  await insertBulk(em, Invoice, invoices);
  await insertBulk(em, InvoiceOrderLink, links);
  await insertBulk(em, StatusChange, changes);
}

/**
 * A playground sandbox's demo data: one vendor and a handful of port calls (past, in port and
 * planned) of the demo vessels at the demo ports, relative to the clock. Writes through `em`
 * without flushing, so it lands in the caller's transaction with the sandbox account itself.
 * Nothing is seeded when the shared reference data (ports, vessels) is absent.
 */
export async function seedPortOpsSandbox(
  { em, clock }: Pick<ServiceDeps, 'em' | 'clock'>,
  accountId: string,
): Promise<void> {
  const ports = await em.find(
    Port,
    { locode: { $in: DEMO_PORTS.slice(0, 3).map((p) => p.locode) } },
    { orderBy: { locode: 'asc' } },
  );
  const vessels = await em.find(
    Vessel,
    { imo: { $in: DEMO_VESSELS.map((v) => v.imo) } },
    { orderBy: { imo: 'asc' } },
  );
  if (ports.length === 0 || vessels.length === 0) return;
  const now = clock.now().getTime();
  const at = (hours: number) => new Date(Math.round(now / HOUR + hours) * HOUR);
  em.persist(
    em.create(Vendor, {
      accountId,
      name: `Sandbox Marine Services ${ports[0]!.name}`,
      services: [ServiceType.BUNKERING, ServiceType.PILOTAGE, ServiceType.TOWAGE],
      ports: ports.map((p) => p.locode),
      contactEmail: 'ops@sandbox-marine.example',
      contactPhone: null,
      active: true,
      createdAt: at(-30 * 24),
    }),
  );
  const steps = [
    [PortCallStatus.ARRIVED, 'ata', 1],
    [PortCallStatus.BERTHED, 'atb', 6],
    [PortCallStatus.DEPARTED, 'atd', 30],
  ] as const;
  // [hours from now of the ETA, how many of the steps the call has taken]
  const plan: Array<[number, number]> = [
    [-10 * 24, 3],
    [-3 * 24, 3],
    [-12, 2],
    [-2, 1],
    [5 * 24, 0],
    [12 * 24, 0],
  ];
  plan.forEach(([etaHours, taken], i) => {
    const createdAt = at(etaHours - 14 * 24);
    const call = em.create(PortCall, {
      accountId,
      vesselId: vessels[i % vessels.length]!.id,
      portId: ports[i % ports.length]!.id,
      voyageReference: `SANDBOX-${String(i + 1).padStart(3, '0')}`,
      agent: 'Sandbox Agency',
      status: PortCallStatus.SCHEDULED,
      eta: at(etaHours),
      etb: at(etaHours + 6),
      etd: at(etaHours + 30),
      ata: null,
      atb: null,
      atd: null,
      createdAt,
      updatedAt: createdAt,
    });
    const changes: Array<[string | null, PortCallStatus, Date]> = [
      [null, PortCallStatus.SCHEDULED, createdAt],
    ];
    for (const [status, field, hours] of steps.slice(0, taken)) {
      changes.push([call.status, status, at(etaHours + hours)]);
      call.status = status;
      call[field] = call.updatedAt = at(etaHours + hours);
    }
    em.persist(call);
    for (const [from, to, when] of changes)
      em.persist(
        em.create(StatusChange, {
          subjectType: StatusSubject.PORT_CALL,
          subjectId: call.id,
          from,
          to,
          at: when,
          actor: 'system',
          recordedAt: when,
        }),
      );
  });
}
