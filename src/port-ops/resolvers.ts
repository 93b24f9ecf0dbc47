import {
  Arg,
  Args,
  Ctx,
  Field,
  FieldResolver,
  Float,
  ID,
  InputType,
  Int,
  Mutation,
  ObjectType,
  Query,
  Resolver,
  Root,
} from 'type-graphql';
import { JSONObjectResolver as JSONObject } from 'graphql-scalars';
import { Connection } from '../gateway/schema/connection.js';
import { requirePrincipal, type GatewayContext } from '../gateway/schema/context.js';
import { RequiresScopes } from '../gateway/schema/directives.js';
import { findOwnedOrNull, findPage, type Deps } from './common.js';
import { listDocuments, prepareDocument, signUpload, uploadClaims, UPLOAD_URL_TTL_MS } from './documents.js';
import {
  AttachmentType,
  Document,
  DocumentKind,
  Invoice,
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
} from './entities.js';
import { createInvoice, listInvoices, transitionInvoice } from './invoices.js';
import {
  loadPort,
  loadPortCall,
  loadServiceOrders,
  loadStatusHistory,
  loadVendor,
  loadVessel,
} from './loaders.js';
import { OffsetPageArgs, pageEchoResolver, pageOf, pagedConnection } from '../gateway/schema/paging.js';
import * as ops from './service.js';
import { parseImo, parseLocode } from './validation.js';

const deps = (ctx: GatewayContext): Deps => ({
  em: ctx.em,
  clock: ctx.services.clock,
  events: ctx.services.events,
});

export const VesselConnection = Connection(Vessel, 'Vessel');
export const PortConnection = Connection(Port, 'Port');
export const PortCallConnection = Connection(PortCall, 'PortCall');
export const ServiceOrderConnection = Connection(ServiceOrder, 'ServiceOrder');
export const VendorConnection = Connection(Vendor, 'Vendor');
export const InvoiceConnection = Connection(Invoice, 'Invoice');

// ---------------------------------------------------------------- inputs

@InputType()
class VesselInput {
  @Field(() => String) imo!: string;
  @Field(() => String) name!: string;
  @Field(() => String, { description: 'ISO 3166-1 alpha-2.' }) flag!: string;
  @Field(() => VesselType) type!: VesselType;
  @Field(() => Int) grossTonnage!: number;
  @Field(() => Int) deadweight!: number;
  @Field(() => Int) yearBuilt!: number;
}

@InputType()
class PortInput {
  @Field(() => String) locode!: string;
  @Field(() => String) name!: string;
  @Field(() => String, { description: 'IANA time zone.' }) timeZone!: string;
}

@InputType()
class PortCallInput {
  @Field(() => String) vesselImo!: string;
  @Field(() => String) portLocode!: string;
  @Field(() => String) voyageReference!: string;
  @Field(() => String, { nullable: true }) agent?: string | null;
  @Field(() => Date) eta!: Date;
  @Field(() => Date, { nullable: true }) etb?: Date | null;
  @Field(() => Date, { nullable: true }) etd?: Date | null;
}

@InputType({ description: 'Only the fields given change; null clears an optional field.' })
class PortCallPatch {
  @Field(() => String, { nullable: true }) voyageReference?: string | null;
  @Field(() => String, { nullable: true }) agent?: string | null;
  @Field(() => Date, { nullable: true }) eta?: Date | null;
  @Field(() => Date, { nullable: true }) etb?: Date | null;
  @Field(() => Date, { nullable: true }) etd?: Date | null;
}

@InputType()
class VendorInput {
  @Field(() => String) name!: string;
  @Field(() => [ServiceType]) services!: ServiceType[];
  @Field(() => [String], { description: 'UN/LOCODEs of the ports served.' }) ports!: string[];
  @Field(() => String, { nullable: true }) contactEmail?: string | null;
  @Field(() => String, { nullable: true }) contactPhone?: string | null;
  @Field(() => Boolean, { nullable: true }) active?: boolean | null;
}

@InputType()
class VendorPatch {
  @Field(() => String, { nullable: true }) name?: string;
  @Field(() => [ServiceType], { nullable: true }) services?: ServiceType[];
  @Field(() => [String], { nullable: true }) ports?: string[];
  @Field(() => String, { nullable: true }) contactEmail?: string | null;
  @Field(() => String, { nullable: true }) contactPhone?: string | null;
  @Field(() => Boolean, { nullable: true }) active?: boolean | null;
}

@InputType({ description: "The seed's service-order request shape." })
class ServiceOrderInput {
  @Field(() => ID) portCallId!: string;
  @Field(() => ServiceType) serviceType!: ServiceType;
  @Field(() => ID) vendorId!: string;
  @Field(() => JSONObject, {
    description: 'Validated per service type, e.g. BUNKERING {quantity, unit, fuelType}.',
  })
  details!: Record<string, unknown>;
  @Field(() => Date, {
    nullable: true,
    description: "When the service is wanted; defaults to the call's ETB (or ETA).",
  })
  requestedFor?: Date | null;
}

@InputType()
class InvoiceLineInput {
  @Field(() => String) description!: string;
  @Field(() => String, { description: 'Decimal, up to 3 places, greater than 0, at most 1000000000.' })
  quantity!: string;
  @Field(() => String, { description: 'Decimal, up to 2 places, 0 to 1000000000.' }) unitPrice!: string;
  @Field(() => ID, {
    nullable: true,
    description: "A COMPLETED order of the invoice's vendor, not on another invoice unless that one is VOID.",
  })
  serviceOrderId?: string | null;
}

@InputType()
class InvoiceInput {
  @Field(() => ID) vendorId!: string;
  @Field(() => String) number!: string;
  @Field(() => String, { description: 'ISO 4217 with 2 minor digits.' }) currency!: string;
  @Field(() => String, { nullable: true, description: 'Percent, up to 2 places; default "0".' }) taxRate?:
    string | null;
  @Field(() => String, {
    description: 'Calendar date YYYY-MM-DD (a date-time only at 00:00 UTC), not before the invoice date.',
  })
  dueDate!: string;
  @Field(() => [InvoiceLineInput]) lines!: InvoiceLineInput[];
}

// ---------------------------------------------------------------- vessels and ports

@Resolver(() => Vessel)
export class VesselResolver {
  @Query(() => Vessel, {
    nullable: true,
    description:
      'Look a vessel up by IMO number. A malformed IMO (bad length or check digit) is an error; an unknown one is null.',
  })
  @RequiresScopes('read:vessels')
  vessel(
    @Arg('imo', () => String) imo: string,
    @Ctx() ctx: GatewayContext,
  ): Vessel | null | Promise<Vessel | null> {
    return ctx.services.vessels.find(() => ctx.em, parseImo(imo));
  }

  @Query(() => VesselConnection, { description: 'Vessels by name.' })
  @RequiresScopes('read:vessels')
  async vessels(@Args(() => OffsetPageArgs) args: OffsetPageArgs, @Ctx() ctx: GatewayContext) {
    const page = pageOf(args);
    return pagedConnection(await findPage(ctx.em, Vessel, {}, { name: 'asc', id: 'asc' }, page), page);
  }

  @Mutation(() => Vessel, { description: 'Adds a vessel to the shared register (admin only).' })
  @RequiresScopes('admin')
  async createVessel(
    @Arg('input', () => VesselInput) input: VesselInput,
    @Ctx() ctx: GatewayContext,
  ): Promise<Vessel> {
    const vessel = await ops.createVessel({ em: ctx.em, clock: ctx.services.clock }, input);
    ctx.services.vessels.forget(vessel.imo);
    return vessel;
  }
}

@Resolver(() => Port)
export class PortResolver {
  @Query(() => Port, { nullable: true, description: 'A port by UN/LOCODE; null when unknown.' })
  @RequiresScopes('read:port_calls', 'read:vessels')
  async port(@Arg('locode', () => String) locode: string, @Ctx() ctx: GatewayContext): Promise<Port | null> {
    return ctx.em.findOne(Port, { locode: parseLocode(locode, 'locode') });
  }

  @Query(() => PortConnection, { description: 'Ports by UN/LOCODE.' })
  @RequiresScopes('read:port_calls', 'read:vessels')
  async ports(@Args(() => OffsetPageArgs) args: OffsetPageArgs, @Ctx() ctx: GatewayContext) {
    const page = pageOf(args);
    return pagedConnection(await findPage(ctx.em, Port, {}, { locode: 'asc' }, page), page);
  }

  @Mutation(() => Port, { description: 'Adds a port to the shared register (admin only).' })
  @RequiresScopes('admin')
  async createPort(
    @Arg('input', () => PortInput) input: PortInput,
    @Ctx() ctx: GatewayContext,
  ): Promise<Port> {
    return ops.createPort({ em: ctx.em, clock: ctx.services.clock }, input);
  }
}

// ---------------------------------------------------------------- port calls

@Resolver(() => PortCall)
export class PortCallResolver {
  @Query(() => PortCall, {
    nullable: true,
    description: "One of your account's port calls; null when unknown.",
  })
  @RequiresScopes('read:port_calls')
  async portCall(@Arg('id', () => ID) id: string, @Ctx() ctx: GatewayContext): Promise<PortCall | null> {
    return findOwnedOrNull(ctx.em, PortCall, requirePrincipal(ctx), id);
  }

  @Query(() => PortCallConnection, {
    description: 'Port calls; SCHEDULED lists soonest ETA first, everything else latest first.',
  })
  @RequiresScopes('read:port_calls')
  async portCalls(
    @Args(() => OffsetPageArgs) args: OffsetPageArgs,
    @Arg('status', () => PortCallStatus, { nullable: true }) status: PortCallStatus | null,
    @Arg('portLocode', () => String, { nullable: true }) portLocode: string | null,
    @Arg('vesselImo', () => String, { nullable: true }) vesselImo: string | null,
    @Arg('etaFrom', () => Date, { nullable: true }) etaFrom: Date | null,
    @Arg('etaTo', () => Date, { nullable: true }) etaTo: Date | null,
    @Ctx() ctx: GatewayContext,
  ) {
    const page = pageOf(args);
    return pagedConnection(
      await ops.listPortCalls(
        ctx.em,
        requirePrincipal(ctx),
        { status, portLocode, vesselImo, etaFrom, etaTo },
        page,
      ),
      page,
    );
  }

  @Mutation(() => PortCall, {
    description: 'Schedules a port call (status SCHEDULED). Emits port_call.created.',
  })
  @RequiresScopes('write:port_calls')
  async createPortCall(
    @Arg('input', () => PortCallInput) input: PortCallInput,
    @Ctx() ctx: GatewayContext,
  ): Promise<PortCall> {
    return ops.createPortCall(deps(ctx), requirePrincipal(ctx), input);
  }

  @Mutation(() => PortCall, {
    description:
      'Changes estimates, agent or voyage reference of a call that has not departed or been cancelled.',
  })
  @RequiresScopes('write:port_calls')
  async updatePortCall(
    @Arg('id', () => ID) id: string,
    @Arg('patch', () => PortCallPatch) patch: PortCallPatch,
    @Ctx() ctx: GatewayContext,
  ): Promise<PortCall> {
    return ops.updatePortCall(deps(ctx), requirePrincipal(ctx), id, patch);
  }

  @Mutation(() => PortCall, {
    description:
      'Moves a call along SCHEDULED → ARRIVED → BERTHED → DEPARTED (CANCELLED from SCHEDULED or ARRIVED), stamping ATA/ATB/ATD with `at` (default now). Emits port_call.status_changed.',
  })
  @RequiresScopes('write:port_calls')
  async transitionPortCall(
    @Arg('id', () => ID) id: string,
    @Arg('status', () => PortCallStatus) status: PortCallStatus,
    @Arg('at', () => Date, { nullable: true }) at: Date | null,
    @Ctx() ctx: GatewayContext,
  ): Promise<PortCall> {
    return ops.transitionPortCall(deps(ctx), requirePrincipal(ctx), id, status, at);
  }

  @Mutation(() => ID, {
    description:
      'Deletes a call created by mistake (one without service orders or documents); returns its id.',
  })
  @RequiresScopes('delete:port_calls')
  async deletePortCall(@Arg('id', () => ID) id: string, @Ctx() ctx: GatewayContext): Promise<string> {
    return ops.deletePortCall(deps(ctx), requirePrincipal(ctx), id);
  }

  @FieldResolver(() => Vessel)
  @RequiresScopes('read:vessels')
  vessel(@Root() call: PortCall, @Ctx() ctx: GatewayContext) {
    return loadVessel(ctx, call.vesselId);
  }

  @FieldResolver(() => Port)
  @RequiresScopes('read:port_calls', 'read:vessels')
  port(@Root() call: PortCall, @Ctx() ctx: GatewayContext) {
    return loadPort(ctx, call.portId);
  }

  @FieldResolver(() => String, {
    description: "The vessel's IMO number (part of the call itself, so read:port_calls suffices).",
  })
  async vesselImo(@Root() call: PortCall, @Ctx() ctx: GatewayContext) {
    return (await loadVessel(ctx, call.vesselId)).imo;
  }

  @FieldResolver(() => String, { description: "The port's UN/LOCODE." })
  async portLocode(@Root() call: PortCall, @Ctx() ctx: GatewayContext) {
    return (await loadPort(ctx, call.portId)).locode;
  }

  @FieldResolver(() => [ServiceOrder], { description: 'Every service order of the call, oldest first.' })
  @RequiresScopes('read:service_orders')
  serviceOrders(@Root() call: PortCall, @Ctx() ctx: GatewayContext) {
    return loadServiceOrders(ctx, call.id);
  }

  @FieldResolver(() => [StatusChange], { description: 'Every status transition, oldest first.' })
  @RequiresScopes('read:port_calls')
  statusHistory(@Root() call: PortCall, @Ctx() ctx: GatewayContext) {
    return loadStatusHistory(ctx, StatusSubject.PORT_CALL, call.id);
  }
}

// ---------------------------------------------------------------- vendors

@Resolver(() => Vendor)
export class VendorResolver {
  @Query(() => Vendor, { nullable: true })
  @RequiresScopes('read:vendors')
  async vendor(@Arg('id', () => ID) id: string, @Ctx() ctx: GatewayContext): Promise<Vendor | null> {
    return findOwnedOrNull(ctx.em, Vendor, requirePrincipal(ctx), id);
  }

  @Query(() => VendorConnection, {
    description: 'Vendors by name, optionally those offering a service at a port.',
  })
  @RequiresScopes('read:vendors')
  async vendors(
    @Args(() => OffsetPageArgs) args: OffsetPageArgs,
    @Arg('portLocode', () => String, { nullable: true }) portLocode: string | null,
    @Arg('serviceType', () => ServiceType, { nullable: true }) serviceType: ServiceType | null,
    @Arg('active', () => Boolean, { nullable: true }) active: boolean | null,
    @Ctx() ctx: GatewayContext,
  ) {
    const page = pageOf(args);
    return pagedConnection(
      await ops.listVendors(ctx.em, requirePrincipal(ctx), { portLocode, serviceType, active }, page),
      page,
    );
  }

  @Mutation(() => Vendor)
  @RequiresScopes('write:vendors')
  async createVendor(
    @Arg('input', () => VendorInput) input: VendorInput,
    @Ctx() ctx: GatewayContext,
  ): Promise<Vendor> {
    return ops.createVendor(deps(ctx), requirePrincipal(ctx), input);
  }

  @Mutation(() => Vendor, {
    description: 'Changes a vendor; `active: false` stops new orders but keeps history.',
  })
  @RequiresScopes('write:vendors')
  async updateVendor(
    @Arg('id', () => ID) id: string,
    @Arg('patch', () => VendorPatch) patch: VendorPatch,
    @Ctx() ctx: GatewayContext,
  ): Promise<Vendor> {
    return ops.updateVendor(deps(ctx), requirePrincipal(ctx), id, stripNulls(patch));
  }
}

/** In a patch, null on a required field means "leave it" rather than "clear it". */
function stripNulls<T extends object>(patch: T): T {
  const out = { ...patch } as Record<string, unknown>;
  for (const key of ['name', 'services', 'ports']) if (out[key] === null) delete out[key];
  return out as T;
}

// ---------------------------------------------------------------- service orders

@Resolver(() => ServiceOrder)
export class ServiceOrderResolver {
  @Query(() => ServiceOrder, { nullable: true })
  @RequiresScopes('read:service_orders')
  async serviceOrder(
    @Arg('id', () => ID) id: string,
    @Ctx() ctx: GatewayContext,
  ): Promise<ServiceOrder | null> {
    return findOwnedOrNull(ctx.em, ServiceOrder, requirePrincipal(ctx), id);
  }

  @Query(() => ServiceOrderConnection, { description: 'Service orders, newest first.' })
  @RequiresScopes('read:service_orders')
  async serviceOrders(
    @Args(() => OffsetPageArgs) args: OffsetPageArgs,
    @Arg('portCallId', () => ID, { nullable: true }) portCallId: string | null,
    @Arg('vendorId', () => ID, { nullable: true }) vendorId: string | null,
    @Arg('status', () => ServiceOrderStatus, { nullable: true }) status: ServiceOrderStatus | null,
    @Arg('serviceType', () => ServiceType, { nullable: true }) serviceType: ServiceType | null,
    @Ctx() ctx: GatewayContext,
  ) {
    const page = pageOf(args);
    return pagedConnection(
      await ops.listServiceOrders(
        ctx.em,
        requirePrincipal(ctx),
        { portCallId, vendorId, status, serviceType },
        page,
      ),
      page,
    );
  }

  @Mutation(() => ServiceOrder, {
    description: 'Orders a service for a port call (status REQUESTED). Emits service_order.created.',
  })
  @RequiresScopes('write:service_orders')
  async createServiceOrder(
    @Arg('input', () => ServiceOrderInput) input: ServiceOrderInput,
    @Ctx() ctx: GatewayContext,
  ): Promise<ServiceOrder> {
    return ops.createServiceOrder(deps(ctx), requirePrincipal(ctx), input);
  }

  @Mutation(() => ServiceOrder, {
    description:
      'REQUESTED → CONFIRMED → IN_PROGRESS → COMPLETED; REJECTED from REQUESTED; CANCELLED from REQUESTED or CONFIRMED. Emits service_order.status_changed.',
  })
  @RequiresScopes('write:service_orders')
  async transitionServiceOrder(
    @Arg('id', () => ID) id: string,
    @Arg('status', () => ServiceOrderStatus) status: ServiceOrderStatus,
    @Ctx() ctx: GatewayContext,
  ): Promise<ServiceOrder> {
    return ops.transitionServiceOrder(deps(ctx), requirePrincipal(ctx), id, status);
  }

  @FieldResolver(() => Vendor)
  @RequiresScopes('read:vendors')
  vendor(@Root() order: ServiceOrder, @Ctx() ctx: GatewayContext) {
    return loadVendor(ctx, order.vendorId);
  }

  @FieldResolver(() => PortCall)
  @RequiresScopes('read:port_calls')
  portCall(@Root() order: ServiceOrder, @Ctx() ctx: GatewayContext) {
    return loadPortCall(ctx, order.portCallId);
  }

  @FieldResolver(() => [StatusChange])
  @RequiresScopes('read:service_orders')
  statusHistory(@Root() order: ServiceOrder, @Ctx() ctx: GatewayContext) {
    return loadStatusHistory(ctx, StatusSubject.SERVICE_ORDER, order.id);
  }
}

// ---------------------------------------------------------------- invoices

@Resolver(() => Invoice)
export class InvoiceResolver {
  @Query(() => Invoice, { nullable: true })
  @RequiresScopes('read:invoices')
  async invoice(@Arg('id', () => ID) id: string, @Ctx() ctx: GatewayContext): Promise<Invoice | null> {
    return findOwnedOrNull(ctx.em, Invoice, requirePrincipal(ctx), id);
  }

  @Query(() => InvoiceConnection, { description: 'Invoices, newest first.' })
  @RequiresScopes('read:invoices')
  async invoices(
    @Args(() => OffsetPageArgs) args: OffsetPageArgs,
    @Arg('status', () => InvoiceStatus, { nullable: true }) status: InvoiceStatus | null,
    @Arg('vendorId', () => ID, { nullable: true }) vendorId: string | null,
    @Ctx() ctx: GatewayContext,
  ) {
    const page = pageOf(args);
    return pagedConnection(
      await listInvoices(ctx.em, requirePrincipal(ctx), { status, vendorId }, page),
      page,
    );
  }

  @Mutation(() => Invoice, {
    description: 'Records a vendor invoice as DRAFT; subtotal, tax and total are computed here.',
  })
  @RequiresScopes('write:invoices')
  async createInvoice(
    @Arg('input', () => InvoiceInput) input: InvoiceInput,
    @Ctx() ctx: GatewayContext,
  ): Promise<Invoice> {
    return createInvoice(deps(ctx), requirePrincipal(ctx), input);
  }

  @Mutation(() => Invoice, {
    description: 'DRAFT → ISSUED → PAID; VOID from DRAFT or ISSUED. ISSUED emits invoice.issued.',
  })
  @RequiresScopes('write:invoices')
  async transitionInvoice(
    @Arg('id', () => ID) id: string,
    @Arg('status', () => InvoiceStatus) status: InvoiceStatus,
    @Ctx() ctx: GatewayContext,
  ): Promise<Invoice> {
    return transitionInvoice(deps(ctx), requirePrincipal(ctx), id, status);
  }

  @FieldResolver(() => Vendor)
  @RequiresScopes('read:vendors')
  vendor(@Root() invoice: Invoice, @Ctx() ctx: GatewayContext) {
    return loadVendor(ctx, invoice.vendorId);
  }

  @FieldResolver(() => [StatusChange])
  @RequiresScopes('read:invoices')
  statusHistory(@Root() invoice: Invoice, @Ctx() ctx: GatewayContext) {
    return loadStatusHistory(ctx, StatusSubject.INVOICE, invoice.id);
  }
}

// ---------------------------------------------------------------- documents

@InputType()
class DocumentUploadInput {
  @Field(() => DocumentKind) kind!: DocumentKind;
  @Field(() => AttachmentType) attachedType!: AttachmentType;
  @Field(() => ID) attachedId!: string;
  @Field(() => String) fileName!: string;
  @Field(() => String, {
    description: 'One of application/pdf, image/png, image/jpeg, text/plain, text/csv, xlsx.',
  })
  contentType!: string;
}

@ObjectType({
  description:
    'Where and how to send the file: PUT the raw bytes to `uploadUrl` with the declared Content-Type.',
})
class DocumentUpload {
  @Field(() => String, { description: 'Path on this service; the signed token in it is the credential.' })
  uploadUrl!: string;
  @Field(() => String) method!: string;
  @Field(() => String) contentType!: string;
  @Field(() => Float) maxBytes!: number;
  @Field(() => Date) expiresAt!: Date;
}

export const DocumentConnection = Connection(Document, 'Document');

@Resolver(() => Document)
export class DocumentResolver {
  @Query(() => Document, { nullable: true })
  @RequiresScopes('read:documents')
  async document(@Arg('id', () => ID) id: string, @Ctx() ctx: GatewayContext): Promise<Document | null> {
    return findOwnedOrNull(ctx.em, Document, requirePrincipal(ctx), id);
  }

  @Query(() => DocumentConnection, {
    description: 'Documents, newest first, optionally those attached to one record.',
  })
  @RequiresScopes('read:documents')
  async documents(
    @Args(() => OffsetPageArgs) args: OffsetPageArgs,
    @Arg('attachedType', () => AttachmentType, { nullable: true }) attachedType: AttachmentType | null,
    @Arg('attachedId', () => ID, { nullable: true }) attachedId: string | null,
    @Arg('kind', () => DocumentKind, { nullable: true }) kind: DocumentKind | null,
    @Ctx() ctx: GatewayContext,
  ) {
    const page = pageOf(args);
    return pagedConnection(
      await listDocuments(ctx.em, requirePrincipal(ctx), { attachedType, attachedId, kind }, page),
      page,
    );
  }

  @Mutation(() => DocumentUpload, {
    description:
      "Checks the metadata and target, then returns a signed upload URL, valid once for 15 minutes; the PUT counts against this credential's port-operations rate limit. The multipart POST /v1/documents applies this same rule.",
  })
  @RequiresScopes('write:documents')
  async createDocumentUpload(
    @Arg('input', () => DocumentUploadInput) input: DocumentUploadInput,
    @Ctx() ctx: GatewayContext,
  ): Promise<DocumentUpload> {
    const principal = requirePrincipal(ctx);
    const meta = await prepareDocument(ctx.em, principal, input);
    const expiresAt = new Date(ctx.services.clock.now().getTime() + UPLOAD_URL_TTL_MS);
    const token = signUpload(ctx.services.documentUploadSecret, uploadClaims(principal, meta, expiresAt));
    return {
      uploadUrl: `/v1/documents/uploads?token=${token}`,
      method: 'PUT',
      contentType: meta.contentType,
      maxBytes: ctx.services.config.documentMaxBytes,
      expiresAt,
    };
  }

  @FieldResolver(() => String, {
    description: 'GET this path (same credentials, read:documents) for the content.',
  })
  downloadUrl(@Root() document: Document): string {
    return `/v1/documents/${document.id}/content`;
  }
}

export const portOpsResolvers = [
  DocumentResolver,
  VesselResolver,
  PortResolver,
  PortCallResolver,
  VendorResolver,
  ServiceOrderResolver,
  InvoiceResolver,
  ...[
    VesselConnection,
    PortConnection,
    PortCallConnection,
    ServiceOrderConnection,
    VendorConnection,
    InvoiceConnection,
    DocumentConnection,
  ].map(pageEchoResolver),
];
