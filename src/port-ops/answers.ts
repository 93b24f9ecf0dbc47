import type { AnswerSource } from '../gateway/pipeline/answers.js';
import { isAdmin } from '../kernel/principal.js';
import { versionParts } from './changes.js';

/*
 * The port-operations reads whose results the gateway may keep between requests
 * (src/gateway/pipeline/answers.ts): lists and lookups of port calls, service orders, vendors, vessels and
 * ports with their nested fields. Each is a function of the account's rows, the shared vessel and
 * port registers and the arguments. The versions are rows the database's own triggers bump in
 * every writing transaction (migration PortOpsVersions): `port-ops:<account>` and `port-ops`.
 *
 * Listed field by field, so a field added later executes every time until someone adds it here
 * knowing it reads nothing else. Left out on purpose: `Query.vessel` (served through the vessel
 * cache, which has its own TTL), documents (signed URLs expire), invoices, analytics and
 * predictions (windows ending now), and every mutation and subscription.
 */
const FIELDS: Record<string, readonly string[]> = {
  Query: [
    'portCalls',
    'portCall',
    'serviceOrders',
    'serviceOrder',
    'vendors',
    'vendor',
    'vessels',
    'ports',
    'port',
  ],
  PortCall: [
    'id',
    'voyageReference',
    'agent',
    'status',
    'eta',
    'etb',
    'etd',
    'ata',
    'atb',
    'atd',
    'createdAt',
    'updatedAt',
    'vessel',
    'port',
    'vesselImo',
    'portLocode',
    'serviceOrders',
    'statusHistory',
  ],
  ServiceOrder: [
    'id',
    'portCallId',
    'vendorId',
    'serviceType',
    'details',
    'status',
    'requestedFor',
    'completedAt',
    'createdAt',
    'updatedAt',
    'vendor',
    'portCall',
    'statusHistory',
  ],
  Vendor: ['id', 'name', 'services', 'ports', 'contactEmail', 'contactPhone', 'active', 'createdAt'],
  Vessel: ['id', 'imo', 'name', 'flag', 'type', 'grossTonnage', 'deadweight', 'yearBuilt'],
  Port: ['id', 'locode', 'name', 'country', 'timeZone'],
  StatusChange: ['from', 'to', 'at', 'actor', 'recordedAt'],
  PageInfo: ['hasNextPage', 'hasPreviousPage', 'startCursor', 'endCursor'],
  ...Object.fromEntries(
    ['PortCall', 'ServiceOrder', 'Vendor', 'Vessel', 'Port'].flatMap((node) => [
      [`${node}Connection`, ['edges', 'nodes', 'pageInfo', 'totalCount', 'limit', 'offset']],
      [`${node}Edge`, ['cursor', 'node']],
    ]),
  ),
};

/**
 * What a list of calls reads, every row of it hanging on one of the page's calls (its orders,
 * their vendors and status history, the call's own history) or on the shared registers (vessel,
 * port): the `portCalls` resolver notes the page's call ids in order, and a kept answer selecting
 * only these is carried over moves that changed neither those calls nor any list (changes.ts), or
 * has the calls such moves changed executed again alone and put in their places. The
 * rest of the coordinates (a lookup by id, the lists of orders, vendors, vessels, ports) read
 * rows by other keys and are not noted.
 */
const RECORDED = [
  'Query.portCalls',
  'PortCallConnection.*',
  'PortCallEdge.*',
  'PageInfo.*',
  'PortCall.*',
  'ServiceOrder.*',
  'Vendor.*',
  'Vessel.*',
  'Port.*',
  'StatusChange.*',
];

/** The shared registers' version, then the account's. */
export const portOpsVersionNames = (accountId: string) => ['port-ops', `port-ops:${accountId}`] as const;

const COORDINATES = Object.entries(FIELDS).flatMap(([type, fields]) => fields.map((f) => `${type}.${f}`));

export const portOpsAnswers: AnswerSource = {
  name: 'port-ops',
  coordinates: new Set(COORDINATES),
  recorded: new Set(
    COORDINATES.filter((c) => RECORDED.includes(c) || RECORDED.includes(`${c.slice(0, c.indexOf('.'))}.*`)),
  ),
  changed: (services, accountId, from, to) => {
    const before = versionParts(from);
    const now = versionParts(to);
    // A move of the shared registers (a vessel, a port) is never looked through.
    if (before.shared !== now.shared) return undefined;
    return services.portOpsChanges.callsChanged(services.db.root, accountId, before.account, now.account);
  },
  // An admin reads every account's rows (common.ts `tenant`): its answers are not kept.
  scopeOf: (principal) => (isAdmin(principal) ? undefined : principal.accountId),
  version: (services, accountId) => services.versions.read(portOpsVersionNames(accountId)),
  /*
   * A tenant's mutation writes its own account's rows only: the shared registers (vessels, ports)
   * have admins as their only writers through the pipeline. Marking the shared version on every
   * tenant's write sent every account's next read here to the database. An admin writes across
   * accounts and the registers, but reads nothing kept: its mark of the shared version makes
   * every account's next read here see what it wrote.
   */
  written: (services, principal) => {
    const [shared, account] = portOpsVersionNames(principal.accountId);
    services.versions.written(isAdmin(principal) ? [shared, account] : [account]);
  },
};
