import type { ParamSpec, RestRoute } from '../gateway/doors/rest-routes.js';

/*
 * The port-operations REST routes: each runs a named operation from
 * schema/operations/rest/port-ops.graphql. Lists take limit (default 20, max 100) and offset and
 * answer {"data":[…],"total":N,"limit":L,"offset":O}.
 */

const page: Record<string, ParamSpec> = {
  limit: { from: 'query', type: 'int', default: 20, min: 1, max: 100 },
  offset: { from: 'query', type: 'int', default: 0, min: 0 },
};
const id: Record<string, ParamSpec> = { id: { from: 'path', type: 'string', required: true } };
const q = (type: ParamSpec['type'] = 'string'): ParamSpec => ({ from: 'query', type });
const wholeBody = (): ParamSpec => ({ from: 'body', type: 'json', required: true });

export const portOpsRestRoutes: RestRoute[] = [
  {
    method: 'GET',
    path: '/v1/vessels/lookup',
    operation: 'RestVesselLookup',
    variables: { imo: { from: 'query', type: 'string', required: true } },
    result: 'vessel',
    notFound: { resource: 'Vessel', param: 'imo' },
  },
  { method: 'GET', path: '/v1/ports', operation: 'RestPorts', variables: page, result: 'ports' },

  {
    method: 'GET',
    path: '/v1/port-calls',
    operation: 'RestPortCalls',
    variables: { status: q(), portLocode: q(), vesselImo: q(), etaFrom: q(), etaTo: q(), ...page },
    result: 'portCalls',
  },
  {
    method: 'GET',
    path: '/v1/dashboard/port-calls',
    operation: 'RestPortCallDashboard',
    variables: { status: q(), ...page },
    result: 'portCalls',
  },
  {
    method: 'POST',
    path: '/v1/port-calls',
    operation: 'RestCreatePortCall',
    variables: { input: wholeBody() },
    result: 'createPortCall',
    status: 201,
  },
  {
    method: 'GET',
    path: '/v1/port-calls/:id',
    operation: 'RestPortCall',
    variables: id,
    result: 'portCall',
    notFound: { resource: 'PortCall', param: 'id' },
  },
  {
    method: 'PATCH',
    path: '/v1/port-calls/:id',
    operation: 'RestUpdatePortCall',
    variables: { ...id, patch: wholeBody() },
    result: 'updatePortCall',
  },
  {
    method: 'DELETE',
    path: '/v1/port-calls/:id',
    operation: 'RestDeletePortCall',
    variables: id,
    result: 'deletePortCall',
    status: 204,
  },
  {
    method: 'POST',
    path: '/v1/port-calls/:id/status',
    operation: 'RestTransitionPortCall',
    variables: {
      ...id,
      status: { from: 'body', name: 'status', type: 'string', required: true },
      at: { from: 'body', name: 'at', type: 'string' },
    },
    result: 'transitionPortCall',
  },

  {
    method: 'GET',
    path: '/v1/service-orders',
    operation: 'RestServiceOrders',
    variables: { portCallId: q(), vendorId: q(), status: q(), serviceType: q(), ...page },
    result: 'serviceOrders',
  },
  {
    method: 'POST',
    path: '/v1/service-orders',
    operation: 'RestCreateServiceOrder',
    variables: { input: wholeBody() },
    result: 'createServiceOrder',
    status: 201,
  },
  {
    method: 'GET',
    path: '/v1/service-orders/:id',
    operation: 'RestServiceOrder',
    variables: id,
    result: 'serviceOrder',
    notFound: { resource: 'ServiceOrder', param: 'id' },
  },
  {
    method: 'POST',
    path: '/v1/service-orders/:id/status',
    operation: 'RestTransitionServiceOrder',
    variables: { ...id, status: { from: 'body', name: 'status', type: 'string', required: true } },
    result: 'transitionServiceOrder',
  },

  {
    method: 'GET',
    path: '/v1/vendors',
    operation: 'RestVendors',
    variables: { portLocode: q(), serviceType: q(), active: q('boolean'), ...page },
    result: 'vendors',
  },
  {
    method: 'POST',
    path: '/v1/vendors',
    operation: 'RestCreateVendor',
    variables: { input: wholeBody() },
    result: 'createVendor',
    status: 201,
  },
  {
    method: 'GET',
    path: '/v1/vendors/:id',
    operation: 'RestVendor',
    variables: id,
    result: 'vendor',
    notFound: { resource: 'Vendor', param: 'id' },
  },
  {
    method: 'PATCH',
    path: '/v1/vendors/:id',
    operation: 'RestUpdateVendor',
    variables: { ...id, patch: wholeBody() },
    result: 'updateVendor',
  },

  {
    method: 'GET',
    path: '/v1/invoices',
    operation: 'RestInvoices',
    variables: { status: q(), vendorId: q(), ...page },
    result: 'invoices',
  },
  {
    method: 'POST',
    path: '/v1/invoices',
    operation: 'RestCreateInvoice',
    variables: { input: wholeBody() },
    result: 'createInvoice',
    status: 201,
  },
  {
    method: 'GET',
    path: '/v1/invoices/:id',
    operation: 'RestInvoice',
    variables: id,
    result: 'invoice',
    notFound: { resource: 'Invoice', param: 'id' },
  },
  {
    method: 'POST',
    path: '/v1/invoices/:id/status',
    operation: 'RestTransitionInvoice',
    variables: { ...id, status: { from: 'body', name: 'status', type: 'string', required: true } },
    result: 'transitionInvoice',
  },

  {
    method: 'GET',
    path: '/v1/documents',
    operation: 'RestDocuments',
    variables: { attachedType: q(), attachedId: q(), kind: q(), ...page },
    result: 'documents',
  },
  {
    method: 'GET',
    path: '/v1/documents/:id',
    operation: 'RestDocument',
    variables: id,
    result: 'document',
    notFound: { resource: 'Document', param: 'id' },
  },

  {
    method: 'GET',
    path: '/v1/analytics/turnaround',
    operation: 'RestTurnaround',
    variables: { from: q(), to: q(), byPort: q('boolean'), byVesselType: q('boolean'), period: q() },
    result: 'portCallTurnaround',
  },
  {
    method: 'GET',
    path: '/v1/analytics/bunker-volumes',
    operation: 'RestBunkerVolumes',
    variables: { from: q(), to: q(), portLocode: q() },
    result: 'bunkerVolumes',
  },
  {
    method: 'GET',
    path: '/v1/analytics/vendor-performance',
    operation: 'RestVendorPerformance',
    variables: { from: q(), to: q() },
    result: 'vendorPerformance',
  },
  {
    method: 'GET',
    path: '/v1/analytics/vendor-spend',
    operation: 'RestVendorSpend',
    variables: { from: q(), to: q() },
    result: 'vendorSpend',
  },
  {
    method: 'GET',
    path: '/v1/predictions/port-calls/:id',
    operation: 'RestPortCallPrediction',
    variables: id,
    result: 'portCallPrediction',
  },
  {
    method: 'GET',
    path: '/v1/predictions/bunker-demand',
    operation: 'RestBunkerDemand',
    variables: {
      portLocode: { from: 'query', type: 'string', required: true },
      fuelType: q(),
      months: { from: 'query', type: 'int', min: 1, max: 12 },
    },
    result: 'bunkerDemandForecast',
  },
];
