// Imported in the order the SDL lists the types (type-graphql emits them in definition order).
import { referenceDataResolvers } from './reference-data-resolvers.js';
import { portCallResolvers } from './port-calls-resolvers.js';
import { vendorResolvers } from './vendors-resolvers.js';
import { serviceOrderResolvers } from './service-orders-resolvers.js';
import { invoiceResolvers } from './invoices-resolvers.js';
import { documentResolvers } from './documents-resolvers.js';

/** The record resolvers of port operations, one file per aggregate (analytics: insights-resolvers.ts). */
export const portOpsResolvers = [
  ...documentResolvers,
  ...referenceDataResolvers,
  ...portCallResolvers,
  ...vendorResolvers,
  ...serviceOrderResolvers,
  ...invoiceResolvers,
];
