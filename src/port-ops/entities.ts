import { randomUUID } from 'node:crypto';
import { DateTimeType, Entity, Enum, Index, PrimaryKey, Property, Unique } from '@mikro-orm/core';
import { Field, Float, ID, Int, ObjectType, registerEnumType } from 'type-graphql';
import { JSONObjectResolver as JSONObject } from 'graphql-scalars';
import { RequiresScopes } from '../gateway/schema/directives.js';

/*
 * Relations are plain foreign-key columns (`vesselId`, `portId` …) rather than ORM references:
 * every relation is resolved through a per-request DataLoader, so the ORM never lazy-loads
 * behind our back and the statement count of a query stays visible in the resolvers.
 * `accountId` is the tenant: never exposed, always filtered on.
 */

export enum VesselType {
  TANKER = 'TANKER',
  CHEMICAL_TANKER = 'CHEMICAL_TANKER',
  LNG_CARRIER = 'LNG_CARRIER',
  LPG_CARRIER = 'LPG_CARRIER',
  BULK_CARRIER = 'BULK_CARRIER',
  CONTAINER_SHIP = 'CONTAINER_SHIP',
  GENERAL_CARGO = 'GENERAL_CARGO',
  RO_RO = 'RO_RO',
  CAR_CARRIER = 'CAR_CARRIER',
  PASSENGER = 'PASSENGER',
  OFFSHORE_SUPPLY = 'OFFSHORE_SUPPLY',
  TUG = 'TUG',
  OTHER = 'OTHER',
}
registerEnumType(VesselType, { name: 'VesselType' });

export enum PortCallStatus {
  SCHEDULED = 'SCHEDULED',
  ARRIVED = 'ARRIVED',
  BERTHED = 'BERTHED',
  DEPARTED = 'DEPARTED',
  CANCELLED = 'CANCELLED',
}
registerEnumType(PortCallStatus, { name: 'PortCallStatus' });

export enum ServiceType {
  BUNKERING = 'BUNKERING',
  PILOTAGE = 'PILOTAGE',
  TOWAGE = 'TOWAGE',
  MOORING = 'MOORING',
  FRESH_WATER = 'FRESH_WATER',
  PROVISIONS = 'PROVISIONS',
  WASTE_REMOVAL = 'WASTE_REMOVAL',
  CREW_CHANGE = 'CREW_CHANGE',
  REPAIRS = 'REPAIRS',
  SURVEY = 'SURVEY',
}
registerEnumType(ServiceType, { name: 'ServiceType' });

export enum ServiceOrderStatus {
  REQUESTED = 'REQUESTED',
  CONFIRMED = 'CONFIRMED',
  IN_PROGRESS = 'IN_PROGRESS',
  COMPLETED = 'COMPLETED',
  CANCELLED = 'CANCELLED',
  REJECTED = 'REJECTED',
}
registerEnumType(ServiceOrderStatus, { name: 'ServiceOrderStatus' });

export enum FuelType {
  VLSFO = 'VLSFO',
  HSFO = 'HSFO',
  ULSFO = 'ULSFO',
  MGO = 'MGO',
  LSMGO = 'LSMGO',
  LNG = 'LNG',
  B24 = 'B24',
  B30 = 'B30',
  B100 = 'B100',
}
registerEnumType(FuelType, {
  name: 'FuelType',
  description: 'Marine fuels; B24/B30/B100 are biofuel blends (FAME share in %).',
});

export enum InvoiceStatus {
  DRAFT = 'DRAFT',
  ISSUED = 'ISSUED',
  PAID = 'PAID',
  VOID = 'VOID',
}
registerEnumType(InvoiceStatus, { name: 'InvoiceStatus' });

export enum DocumentKind {
  BUNKER_DELIVERY_NOTE = 'BUNKER_DELIVERY_NOTE',
  CERTIFICATE = 'CERTIFICATE',
  INVOICE_COPY = 'INVOICE_COPY',
  OTHER = 'OTHER',
}
registerEnumType(DocumentKind, { name: 'DocumentKind' });

export enum AttachmentType {
  PORT_CALL = 'PORT_CALL',
  SERVICE_ORDER = 'SERVICE_ORDER',
  VESSEL = 'VESSEL',
}
registerEnumType(AttachmentType, { name: 'AttachmentType' });

export enum StatusSubject {
  PORT_CALL = 'PORT_CALL',
  SERVICE_ORDER = 'SERVICE_ORDER',
  INVOICE = 'INVOICE',
}

@ObjectType({
  simpleResolvers: true,
  description: 'A ship, identified by its IMO number. Shared reference data.',
})
@Entity({ tableName: 'vessels' })
export class Vessel {
  @Field(() => ID)
  @PrimaryKey({ type: 'uuid' })
  id: string = randomUUID();

  @Field(() => String, { description: 'Seven-digit IMO number with a valid check digit.' })
  @Property({ type: 'string', length: 7, unique: true })
  imo!: string;

  @Field(() => String)
  @Property({ type: 'string', length: 200 })
  name!: string;

  @Field(() => String, { description: 'Flag state, ISO 3166-1 alpha-2.' })
  @Property({ type: 'string', length: 2 })
  flag!: string;

  @Field(() => VesselType)
  @Enum({ items: () => VesselType })
  type!: VesselType;

  @Field(() => Int)
  @Property({ type: 'integer' })
  grossTonnage!: number;

  @Field(() => Int, { description: 'Deadweight tonnage (metric tonnes).' })
  @Property({ type: 'integer' })
  deadweight!: number;

  @Field(() => Int)
  @Property({ type: 'integer' })
  yearBuilt!: number;

  @Property({ type: DateTimeType })
  createdAt!: Date;
}

@ObjectType({
  simpleResolvers: true,
  description: 'A port, identified by its UN/LOCODE. Shared reference data.',
})
@Entity({ tableName: 'ports' })
export class Port {
  @Field(() => ID)
  @PrimaryKey({ type: 'uuid' })
  id: string = randomUUID();

  @Field(() => String, {
    description: 'UN/LOCODE: ISO country code + 3-character location code, e.g. SGSIN.',
  })
  @Property({ type: 'string', length: 5, unique: true })
  locode!: string;

  @Field(() => String)
  @Property({ type: 'string', length: 200 })
  name!: string;

  @Field(() => String, { description: 'ISO 3166-1 alpha-2; the first two characters of the LOCODE.' })
  @Property({ type: 'string', length: 2 })
  country!: string;

  @Field(() => String, { description: 'IANA time zone, e.g. Asia/Singapore.' })
  @Property({ type: 'string', length: 64 })
  timeZone!: string;

  @Property({ type: DateTimeType })
  createdAt!: Date;
}

@ObjectType({ simpleResolvers: true, description: "A vessel's visit to a port." })
@Entity({ tableName: 'port_calls' })
@Index({ properties: ['accountId', 'eta'] })
@Index({ properties: ['accountId', 'status', 'eta'] })
@Index({ properties: ['accountId', 'portId', 'eta'] })
export class PortCall {
  @Field(() => ID)
  @PrimaryKey({ type: 'uuid' })
  id: string = randomUUID();

  @Property({ type: 'uuid' })
  accountId!: string;

  @Property({ type: 'uuid' })
  vesselId!: string;

  @Property({ type: 'uuid' })
  portId!: string;

  @Field(() => String, { description: "The operator's voyage reference, unique per account." })
  @Property({ type: 'string', length: 64 })
  voyageReference!: string;

  @Field(() => String, { nullable: true, description: 'The port agent handling the call.' })
  @Property({ type: 'string', length: 200, nullable: true })
  agent?: string | null;

  @Field(() => PortCallStatus)
  @Enum({ items: () => PortCallStatus })
  status: PortCallStatus = PortCallStatus.SCHEDULED;

  @Field(() => Date, { description: 'Estimated time of arrival.' })
  @Property({ type: DateTimeType })
  eta!: Date;

  @Field(() => Date, { nullable: true, description: 'Estimated time of berthing.' })
  @Property({ type: DateTimeType, nullable: true })
  etb?: Date | null;

  @Field(() => Date, { nullable: true, description: 'Estimated time of departure.' })
  @Property({ type: DateTimeType, nullable: true })
  etd?: Date | null;

  @Field(() => Date, {
    nullable: true,
    description: 'Actual time of arrival (set by the ARRIVED transition).',
  })
  @Property({ type: DateTimeType, nullable: true })
  ata?: Date | null;

  @Field(() => Date, { nullable: true, description: 'Actual time of berthing (set by BERTHED).' })
  @Property({ type: DateTimeType, nullable: true })
  atb?: Date | null;

  @Field(() => Date, { nullable: true, description: 'Actual time of departure (set by DEPARTED).' })
  @Property({ type: DateTimeType, nullable: true })
  atd?: Date | null;

  @Field(() => Date)
  @Property({ type: DateTimeType })
  createdAt!: Date;

  @Field(() => Date)
  @Property({ type: DateTimeType })
  updatedAt!: Date;
}

@ObjectType({ simpleResolvers: true, description: 'One recorded status transition, with when and who.' })
@Entity({ tableName: 'status_changes' })
@Index({ properties: ['subjectType', 'subjectId', 'recordedAt'] })
export class StatusChange {
  @PrimaryKey({ type: 'uuid' })
  id: string = randomUUID();

  @Property({ type: 'string', length: 16 })
  subjectType!: StatusSubject;

  @Property({ type: 'uuid' })
  subjectId!: string;

  @Field(() => String, { nullable: true, description: 'Null for the creation of the record.' })
  @Property({ type: 'string', length: 16, nullable: true })
  from?: string | null;

  @Field(() => String)
  @Property({ type: 'string', length: 16 })
  to!: string;

  @Field(() => Date, { description: 'When the new status took effect (ATA/ATB/ATD for port calls).' })
  @Property({ type: DateTimeType })
  at!: Date;

  @Field(() => String, {
    description: 'Who made the change: `user:<id>`, `api_key:<id>`, `client:<id>` or `system`.',
  })
  @Property({ type: 'string', length: 100 })
  actor!: string;

  @Field(() => Date, {
    description: 'When the change was recorded; `at` may be earlier (an actual time reported late).',
  })
  @Property({ type: DateTimeType })
  recordedAt!: Date;
}

@ObjectType({
  simpleResolvers: true,
  description: 'A supplier of port services (bunker supplier, towage company, chandler …).',
})
@Entity({ tableName: 'vendors' })
@Index({ properties: ['accountId', 'name'] })
export class Vendor {
  @Field(() => ID)
  @PrimaryKey({ type: 'uuid' })
  id: string = randomUUID();

  @Property({ type: 'uuid' })
  accountId!: string;

  @Field(() => String)
  @Property({ type: 'string', length: 200 })
  name!: string;

  @Field(() => [ServiceType], { description: 'Services this vendor offers, at every port it serves.' })
  @Property({ type: 'json' })
  services!: ServiceType[];

  @Field(() => [String], { description: 'UN/LOCODEs of the ports served.' })
  @Property({ type: 'json' })
  ports!: string[];

  @Field(() => String, { nullable: true })
  @Property({ type: 'string', length: 320, nullable: true })
  contactEmail?: string | null;

  @Field(() => String, { nullable: true })
  @Property({ type: 'string', length: 40, nullable: true })
  contactPhone?: string | null;

  @Field(() => Boolean, { description: 'Inactive vendors keep their history but take no new orders.' })
  @Property({ type: 'boolean' })
  active: boolean = true;

  @Field(() => Date)
  @Property({ type: DateTimeType })
  createdAt!: Date;
}

@ObjectType({ simpleResolvers: true, description: 'A service ordered from a vendor for a port call.' })
@Entity({ tableName: 'service_orders' })
@Index({ properties: ['portCallId'] })
@Index({ properties: ['accountId', 'status'] })
@Index({ properties: ['vendorId'] })
export class ServiceOrder {
  @Field(() => ID)
  @PrimaryKey({ type: 'uuid' })
  id: string = randomUUID();

  @Property({ type: 'uuid' })
  accountId!: string;

  @Field(() => ID)
  @Property({ type: 'uuid' })
  portCallId!: string;

  @Field(() => ID)
  @Property({ type: 'uuid' })
  vendorId!: string;

  @Field(() => ServiceType)
  @Enum({ items: () => ServiceType })
  serviceType!: ServiceType;

  @Field(() => JSONObject, {
    description:
      'Service-specific details, validated per service type (see src/port-ops/README.md, "Service types and details").',
  })
  @Property({ type: 'json' })
  details!: Record<string, unknown>;

  @Field(() => ServiceOrderStatus)
  @Enum({ items: () => ServiceOrderStatus })
  status: ServiceOrderStatus = ServiceOrderStatus.REQUESTED;

  @Field(() => Date, {
    nullable: true,
    description: 'When the service is wanted; the on-time measure compares completion with it.',
  })
  @Property({ type: DateTimeType, nullable: true })
  requestedFor?: Date | null;

  @Field(() => Date, { nullable: true })
  @Property({ type: DateTimeType, nullable: true })
  completedAt?: Date | null;

  @Field(() => Date)
  @Property({ type: DateTimeType })
  createdAt!: Date;

  @Field(() => Date)
  @Property({ type: DateTimeType })
  updatedAt!: Date;
}

@ObjectType({
  simpleResolvers: true,
  description: 'One invoice line. Amounts are decimal strings computed on the server.',
})
export class InvoiceLine {
  @Field(() => String)
  description!: string;

  @Field(() => String, { description: 'Decimal, up to 3 decimal places.' })
  quantity!: string;

  @Field(() => String, { description: 'Decimal with 2 decimal places, in the invoice currency.' })
  unitPrice!: string;

  @Field(() => String, { description: 'quantity × unitPrice, rounded half-up to 2 decimal places.' })
  amount!: string;

  @Field(() => ID, { nullable: true })
  serviceOrderId?: string | null;
}

@RequiresScopes('read:invoices')
@ObjectType({
  simpleResolvers: true,
  description: "A vendor's invoice. Money is a decimal string plus an ISO-4217 currency.",
})
@Entity({ tableName: 'invoices' })
@Index({ properties: ['accountId', 'status'] })
@Index({ properties: ['vendorId'] })
@Unique({ properties: ['accountId', 'number'] })
export class Invoice {
  @Field(() => ID)
  @PrimaryKey({ type: 'uuid' })
  id: string = randomUUID();

  @Property({ type: 'uuid' })
  accountId!: string;

  @Field(() => ID)
  @Property({ type: 'uuid' })
  vendorId!: string;

  @Field(() => String, { description: "The vendor's invoice number, unique per account." })
  @Property({ type: 'string', length: 64 })
  number!: string;

  @Field(() => InvoiceStatus)
  @Enum({ items: () => InvoiceStatus })
  status: InvoiceStatus = InvoiceStatus.DRAFT;

  @Field(() => String, { description: 'ISO 4217.' })
  @Property({ type: 'string', length: 3 })
  currency!: string;

  @Field(() => [InvoiceLine])
  @Property({ type: 'json' })
  lines!: InvoiceLine[];

  @Field(() => [ID], { description: 'Service orders this invoice bills (from its lines).' })
  @Property({ type: 'json' })
  serviceOrderIds!: string[];

  @Field(() => String, { description: 'Tax rate in percent, decimal string (e.g. "9.00").' })
  @Property({ type: 'string', length: 16 })
  taxRate!: string;

  @Field(() => String)
  @Property({ type: 'string', length: 32 })
  subtotal!: string;

  @Field(() => String)
  @Property({ type: 'string', length: 32 })
  tax!: string;

  @Field(() => String)
  @Property({ type: 'string', length: 32 })
  total!: string;

  @Field(() => Date, { description: 'Payment due (UTC date at 00:00).' })
  @Property({ type: DateTimeType })
  dueDate!: Date;

  @Field(() => Date, { nullable: true })
  @Property({ type: DateTimeType, nullable: true })
  issuedAt?: Date | null;

  @Field(() => Date, { nullable: true })
  @Property({ type: DateTimeType, nullable: true })
  paidAt?: Date | null;

  @Field(() => Date)
  @Property({ type: DateTimeType })
  createdAt!: Date;
}

@RequiresScopes('read:documents')
@ObjectType({
  simpleResolvers: true,
  description:
    'A stored file (bunker delivery note, certificate …) attached to a port call, service order or vessel.',
})
@Entity({ tableName: 'documents' })
@Index({ properties: ['accountId', 'attachedType', 'attachedId'] })
export class Document {
  @Field(() => ID)
  @PrimaryKey({ type: 'uuid' })
  id: string = randomUUID();

  @Property({ type: 'uuid' })
  accountId!: string;

  @Field(() => DocumentKind)
  @Enum({ items: () => DocumentKind })
  kind!: DocumentKind;

  @Field(() => AttachmentType)
  @Enum({ items: () => AttachmentType })
  attachedType!: AttachmentType;

  @Field(() => ID)
  @Property({ type: 'uuid' })
  attachedId!: string;

  @Field(() => String)
  @Property({ type: 'string', length: 255 })
  fileName!: string;

  @Field(() => String)
  @Property({ type: 'string', length: 100 })
  contentType!: string;

  @Field(() => Float, { description: 'Size in bytes.' })
  @Property({ type: 'integer' })
  sizeBytes!: number;

  @Field(() => String, { description: 'SHA-256 of the content (hex); also its storage address.' })
  @Property({ type: 'string', length: 64 })
  sha256!: string;

  @Field(() => String)
  @Property({ type: 'string', length: 100 })
  uploadedBy!: string;

  @Field(() => Date)
  @Property({ type: DateTimeType })
  createdAt!: Date;
}

/**
 * Which invoice bills a service order. The service order id is the primary key, so an order can
 * be on at most one invoice at a time; the row is removed when its invoice is VOIDed, freeing
 * the order to be billed again. The database, not a read-then-write, enforces "billed once".
 */
@Entity({ tableName: 'invoice_order_links' })
@Index({ properties: ['invoiceId'] })
export class InvoiceOrderLink {
  @PrimaryKey({ type: 'uuid' })
  serviceOrderId!: string;

  @Property({ type: 'uuid' })
  invoiceId!: string;
}

/**
 * A signed upload URL that has been used. The token id is the primary key, so a replayed URL
 * cannot create a second document; rows past their URL's expiry are pruned.
 */
@Entity({ tableName: 'document_upload_tokens' })
@Index({ properties: ['expiresAt'] })
export class UsedUploadToken {
  @PrimaryKey({ type: 'uuid' })
  id!: string;

  @Property({ type: 'uuid' })
  documentId!: string;

  @Property({ type: DateTimeType })
  expiresAt!: Date;

  @Property({ type: DateTimeType })
  usedAt!: Date;
}

export const portOpsEntities = [
  Vessel,
  Port,
  PortCall,
  StatusChange,
  Vendor,
  ServiceOrder,
  Invoice,
  Document,
  InvoiceOrderLink,
  UsedUploadToken,
];
