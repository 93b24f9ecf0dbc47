import { Arg, Ctx, Field, Float, ID, Int, ObjectType, Query, Resolver, registerEnumType } from 'type-graphql';
import { requirePrincipal, type GatewayContext } from '../gateway/schema/context.js';
import { Cost, ListSize, RequiresScopes } from '../gateway/schema/directives.js';
import { bunkerVolumes, Period, turnaround, vendorPerformance, vendorSpend, windowOf } from './analytics.js';
import { FuelType, PortCall, VesselType } from './entities.js';
import { bunkerDemandForecast, loadHistory, predictPortCall, type Sample } from './predictions.js';

registerEnumType(Period, {
  name: 'AnalyticsPeriod',
  description: 'Time bucket of a report row (UTC calendar); ALL = one bucket.',
});

@ObjectType()
class TurnaroundStat {
  @Field(() => String, { nullable: true }) portLocode!: string | null;
  @Field(() => VesselType, { nullable: true }) vesselType!: VesselType | null;
  @Field(() => String, { nullable: true, description: 'e.g. 2026-03, 2026-Q1, 2026; null for ALL.' })
  period!: string | null;
  @Field(() => Int) calls!: number;
  @Field(() => Float) meanHours!: number;
  @Field(() => Float) medianHours!: number;
  @Field(() => Float) p90Hours!: number;
}

@ObjectType({ description: 'Time in port (ATD − ATA) of departed calls whose arrival falls in [from, to).' })
class TurnaroundReport {
  @Field(() => Date) from!: Date;
  @Field(() => Date) to!: Date;
  @Field(() => [TurnaroundStat]) rows!: TurnaroundStat[];
}

@ObjectType()
class BunkerVolume {
  @Field(() => String, { description: 'YYYY-MM (UTC) of delivery completion.' }) month!: string;
  @Field(() => String) portLocode!: string;
  @Field(() => String) fuelType!: string;
  @Field(() => String, { description: 'MT or M3; different units are never summed together.' }) unit!: string;
  @Field(() => Float) quantity!: number;
  @Field(() => Int) deliveries!: number;
}

@ObjectType()
class BunkerVolumeReport {
  @Field(() => Date) from!: Date;
  @Field(() => Date) to!: Date;
  @Field(() => [BunkerVolume]) rows!: BunkerVolume[];
}

@ObjectType()
class VendorPerformanceStat {
  @Field(() => ID) vendorId!: string;
  @Field(() => String) vendorName!: string;
  @Field(() => Int, { description: 'Orders created in the window.' }) orders!: number;
  @Field(() => Int) completed!: number;
  @Field(() => Int, { description: 'Completed no later than requestedFor + 2 h.' }) onTime!: number;
  @Field(() => Float, { nullable: true, description: 'onTime / completed.' }) onTimeRate!: number | null;
  @Field(() => Int, { description: 'CANCELLED or REJECTED.' }) cancelled!: number;
  @Field(() => Float, { nullable: true, description: 'cancelled / orders.' }) cancellationRate!:
    number | null;
}

@ObjectType()
class VendorPerformanceReport {
  @Field(() => Date) from!: Date;
  @Field(() => Date) to!: Date;
  @Field(() => [VendorPerformanceStat]) rows!: VendorPerformanceStat[];
}

@ObjectType()
class VendorSpendStat {
  @Field(() => ID) vendorId!: string;
  @Field(() => String) vendorName!: string;
  @Field(() => String) currency!: string;
  @Field(() => Int) invoices!: number;
  @Field(() => String, { description: 'Decimal string, 2 places.' }) total!: string;
  @Field(() => String) paid!: string;
  @Field(() => String) outstanding!: string;
}

@ObjectType({ description: 'ISSUED and PAID invoices by issue date in [from, to).' })
class VendorSpendReport {
  @Field(() => Date) from!: Date;
  @Field(() => Date) to!: Date;
  @Field(() => [VendorSpendStat]) rows!: VendorSpendStat[];
}

@ObjectType({ description: '10th, 50th and 90th percentiles.' })
class HourQuantiles {
  @Field(() => Float) p10!: number;
  @Field(() => Float) p50!: number;
  @Field(() => Float) p90!: number;
}

@ObjectType()
class TimeQuantiles {
  @Field(() => Date) p10!: Date;
  @Field(() => Date) p50!: Date;
  @Field(() => Date) p90!: Date;
}

@ObjectType({
  description:
    'How the method did on held-out history from the same kind of anchor: trained on calls that departed before the last `holdoutDays`, it predicted each call arriving inside them at the anchor moment.',
})
class PredictionEvaluation {
  @Field(() => Int) holdoutDays!: number;
  @Field(() => String, { description: 'The anchor kind evaluated: that of this prediction.' })
  anchorKind!: string;
  @Field(() => Int) evaluatedCalls!: number;
  @Field(() => Float, {
    nullable: true,
    description: 'Mean absolute error of the p50 berthing time, hours; null from ATB.',
  })
  berthMaeHours!: number | null;
  @Field(() => Float, {
    nullable: true,
    description: 'Mean absolute error of the p50 departure time, hours.',
  })
  departureMaeHours!: number | null;
  @Field(() => Float, {
    nullable: true,
    description: 'Share (0–1) of held-out calls whose actual departure fell inside the p10–p90 interval.',
  })
  departureCoverage!: number | null;
}

@ObjectType({
  description: 'Predicted berthing and departure of a port call, with uncertainty and provenance.',
})
class PortCallPrediction {
  @Field(() => ID, { description: 'The id of the call predicted (needs no further scope).' })
  portCallId!: string;
  @Field(() => PortCall, { description: 'The call predicted; reading it needs read:port_calls.' })
  @RequiresScopes('read:port_calls')
  portCall!: PortCall;
  @Field(() => String) method!: string;
  @Field(() => String) methodVersion!: string;
  @Field(() => String, {
    description:
      'Group the quantiles came from: PORT_VESSEL_TYPE_SEASON, PORT_VESSEL_TYPE, PORT or GLOBAL (see src/port-ops/README.md, "Predictions").',
  })
  basis!: string;
  @Field(() => Int, { description: 'Departed calls the quantiles came from (after conditioning).' })
  sampleSize!: number;
  @Field(() => Date) anchor!: Date;
  @Field(() => String, { description: 'ETA (scheduled), ATA (arrived) or ATB (berthed).' })
  anchorKind!: string;
  @Field(() => Float, { description: 'Hours from the anchor to now; negative while the ETA is ahead.' })
  elapsedHours!: number;
  @Field(() => String, {
    description:
      'NONE (nothing elapsed), ELAPSED (only past calls still in this state after as long) or MEMORYLESS (too few lasted that long; remaining time counted from now).',
  })
  conditioning!: string;
  @Field(() => HourQuantiles, {
    nullable: true,
    description: 'Hours from the anchor to berthing; null once berthed. Never less than elapsedHours.',
  })
  berthHours!: HourQuantiles | null;
  @Field(() => HourQuantiles, {
    description: 'Hours from the anchor to departure. Never less than elapsedHours.',
  })
  departureHours!: HourQuantiles;
  @Field(() => TimeQuantiles, {
    description: 'Berthing time; the actual ATB once berthed. Never before now otherwise.',
  })
  berthAt!: TimeQuantiles;
  @Field(() => TimeQuantiles, { description: 'Departure time; never before now.' })
  departureAt!: TimeQuantiles;
  @Field(() => PredictionEvaluation) evaluation!: PredictionEvaluation;
}

@ObjectType()
class BunkerForecastMonth {
  @Field(() => String) month!: string;
  @Field(() => Float) p10!: number;
  @Field(() => Float) p50!: number;
  @Field(() => Float) p90!: number;
}

@ObjectType({ description: 'Monthly bunker demand forecast for one port, fuel type and unit.' })
class BunkerForecast {
  @Field(() => String) portLocode!: string;
  @Field(() => String) fuelType!: string;
  @Field(() => String) unit!: string;
  @Field(() => String) method!: string;
  @Field(() => String) methodVersion!: string;
  @Field(() => Int, { description: 'Full months of history from the first delivery to last month.' })
  historyMonths!: number;
  @Field(() => [BunkerForecastMonth]) months!: BunkerForecastMonth[];
  @Field(() => Float, {
    nullable: true,
    description:
      'MAE of the p50 over the last 3 full months, forecast from the data before them (same unit).',
  })
  maeQuantity!: number | null;
  @Field(() => Int) evaluatedMonths!: number;
}

@Resolver()
export class InsightsResolver {
  @Query(() => TurnaroundReport, {
    description:
      'Port-call turnaround (time in port): mean, median, p90. Window defaults to the last 365 days.',
  })
  @Cost(2500)
  @RequiresScopes('read:analytics')
  async portCallTurnaround(
    @Arg('from', () => Date, { nullable: true }) from: Date | null,
    @Arg('to', () => Date, { nullable: true }) to: Date | null,
    @Arg('byPort', () => Boolean, { defaultValue: true }) byPort: boolean,
    @Arg('byVesselType', () => Boolean, { defaultValue: false }) byVesselType: boolean,
    @Arg('period', () => Period, { defaultValue: Period.ALL }) period: Period,
    @Ctx() ctx: GatewayContext,
  ): Promise<TurnaroundReport> {
    const window = windowOf(ctx.services.clock, from, to);
    return {
      ...window,
      rows: await turnaround(
        ctx.em,
        requirePrincipal(ctx),
        window,
        { byPort, byVesselType, period },
        ctx.deadline,
      ),
    };
  }

  @Query(() => BunkerVolumeReport, {
    description: 'Delivered bunker volumes by month, port, fuel type and unit.',
  })
  @Cost(3000)
  @RequiresScopes('read:analytics')
  async bunkerVolumes(
    @Arg('from', () => Date, { nullable: true }) from: Date | null,
    @Arg('to', () => Date, { nullable: true }) to: Date | null,
    @Arg('portLocode', () => String, { nullable: true }) portLocode: string | null,
    @Ctx() ctx: GatewayContext,
  ): Promise<BunkerVolumeReport> {
    const window = windowOf(ctx.services.clock, from, to);
    return {
      ...window,
      rows: await bunkerVolumes(ctx.em, requirePrincipal(ctx), window, portLocode, ctx.deadline),
    };
  }

  @Query(() => VendorPerformanceReport, {
    description: 'Per vendor: order volume, on-time rate and cancellation rate.',
  })
  @Cost(3000)
  @RequiresScopes('read:analytics')
  async vendorPerformance(
    @Arg('from', () => Date, { nullable: true }) from: Date | null,
    @Arg('to', () => Date, { nullable: true }) to: Date | null,
    @Ctx() ctx: GatewayContext,
  ): Promise<VendorPerformanceReport> {
    const window = windowOf(ctx.services.clock, from, to);
    const rows = await vendorPerformance(ctx.em, requirePrincipal(ctx), window, ctx.deadline);
    return {
      ...window,
      rows: rows.map(({ vendor, ...r }) => ({ vendorId: vendor.id, vendorName: vendor.name, ...r })),
    };
  }

  @Query(() => VendorSpendReport, {
    description: 'Invoiced spend per vendor and currency, with paid and outstanding amounts.',
  })
  @Cost(1000)
  @RequiresScopes('read:analytics')
  async vendorSpend(
    @Arg('from', () => Date, { nullable: true }) from: Date | null,
    @Arg('to', () => Date, { nullable: true }) to: Date | null,
    @Ctx() ctx: GatewayContext,
  ): Promise<VendorSpendReport> {
    const window = windowOf(ctx.services.clock, from, to);
    const rows = await vendorSpend(ctx.em, requirePrincipal(ctx), window, ctx.deadline);
    return {
      ...window,
      rows: rows.map(({ vendor, ...r }) => ({ vendorId: vendor.id, vendorName: vendor.name, ...r })),
    };
  }

  @Query(() => PortCallPrediction, {
    description: 'Predicted berth and departure times (p10/p50/p90) for a call that has not departed.',
  })
  @Cost(4000)
  @RequiresScopes('ai:predictions')
  async portCallPrediction(
    @Arg('portCallId', () => ID) portCallId: string,
    @Ctx() ctx: GatewayContext,
  ): Promise<PortCallPrediction> {
    const principal = requirePrincipal(ctx);
    // Aliased predictions in one operation share one read of the account's history.
    const histories = ctx.loaders.get<string, Sample[]>('portCallHistory', (em, accounts) =>
      Promise.all(accounts.map(() => loadHistory(em, principal, ctx.services.clock.now()))),
    );
    const prediction = await predictPortCall(
      { em: ctx.em, clock: ctx.services.clock },
      principal,
      portCallId,
      ctx.deadline,
      () => histories.load(principal.accountId),
    );
    return { ...prediction, portCallId: prediction.portCall.id };
  }

  @Query(() => [BunkerForecast], {
    description: 'Bunker demand per fuel type and unit at a port for the next months (default 3, max 12).',
  })
  @Cost(2000)
  // One series per fuel type and unit: at most the nine fuel types in practice.
  @ListSize({ assumedSize: 9 })
  @RequiresScopes('ai:predictions')
  async bunkerDemandForecast(
    @Arg('portLocode', () => String) portLocode: string,
    @Arg('fuelType', () => FuelType, { nullable: true }) fuelType: FuelType | null,
    @Arg('months', () => Int, { nullable: true }) months: number | null,
    @Ctx() ctx: GatewayContext,
  ): Promise<BunkerForecast[]> {
    return bunkerDemandForecast(
      { em: ctx.em, clock: ctx.services.clock },
      requirePrincipal(ctx),
      {
        portLocode,
        fuelType,
        months,
      },
      ctx.deadline,
    );
  }
}
