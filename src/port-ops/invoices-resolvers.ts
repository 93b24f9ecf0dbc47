import {
  Arg,
  Args,
  Ctx,
  Field,
  FieldResolver,
  ID,
  InputType,
  Mutation,
  Query,
  Resolver,
  Root,
} from 'type-graphql';
import { Connection } from '../gateway/schema/connection.js';
import { requirePrincipal, serviceDeps, type GatewayContext } from '../gateway/schema/context.js';
import { RequiresScopes } from '../gateway/schema/directives.js';
import { OffsetPageArgs, pageEchoResolver, pageOf, pagedConnection } from '../gateway/schema/paging.js';
import { findOwnedOrNull } from './common.js';
import { Invoice, InvoiceStatus, StatusChange, StatusSubject, Vendor } from './entities.js';
import { createInvoice, listInvoices, transitionInvoice } from './invoices.js';
import { loadStatusHistory, loadVendor } from './loaders.js';

export const InvoiceConnection = Connection(Invoice, 'Invoice');

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
    return createInvoice(serviceDeps(ctx), requirePrincipal(ctx), input);
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
    return transitionInvoice(serviceDeps(ctx), requirePrincipal(ctx), id, status);
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

export const invoiceResolvers = [InvoiceResolver, pageEchoResolver(InvoiceConnection)];
