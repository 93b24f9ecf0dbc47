import type { AnswerSource } from '../gateway/pipeline/answers.js';
import { isAdmin } from '../kernel/principal.js';

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

/** The shared registers' version, then the account's. */
export const portOpsVersionNames = (accountId: string) => ['port-ops', `port-ops:${accountId}`] as const;

export const portOpsAnswers: AnswerSource = {
  name: 'port-ops',
  coordinates: new Set(Object.entries(FIELDS).flatMap(([type, fields]) => fields.map((f) => `${type}.${f}`))),
  // An admin reads every account's rows (common.ts `tenant`): its answers are not kept.
  scopeOf: (principal) => (isAdmin(principal) ? undefined : principal.accountId),
  version: (services, accountId) => services.versions.read(portOpsVersionNames(accountId)),
  // An admin writes across accounts, but reads nothing kept: its own account stands for it.
  written: (services, principal) => services.versions.written(portOpsVersionNames(principal.accountId)),
};
