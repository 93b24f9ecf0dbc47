import type { CliCommand } from '../db/cli-command.js';
import { parseDuration } from '../kernel/clock.js';
import { badInput } from '../kernel/errors.js';

// The command table loads nothing heavy: each `run` imports what it needs (src/cli.ts).

export const eventsCommands: CliCommand[] = [
  {
    name: 'webhooks list',
    description: 'List webhook endpoints (all accounts, or one), with status and why any was disabled',
    usage: '[--account ID] [--disabled] [--json]',
    options: {
      account: { description: 'Only endpoints of this account id', type: 'string' },
      disabled: { description: 'Only disabled endpoints', type: 'boolean' },
    },
    async run({ db }, { options }) {
      const { WebhookEndpoint, WebhookEndpointStatus } = await import('./entities.js');
      const endpoints = await db.em().find(
        WebhookEndpoint,
        {
          ...(typeof options.account === 'string' ? { accountId: options.account } : {}),
          ...(options.disabled ? { status: WebhookEndpointStatus.DISABLED } : {}),
        },
        { orderBy: { createdAt: 'asc', id: 'asc' } },
      );
      const rows = endpoints.map((e) => ({
        id: e.id,
        account_id: e.accountId,
        domain: e.domain,
        url: e.url,
        event_types: e.eventTypes,
        status: e.status,
        disabled_reason: e.disabledReason ?? null,
        consecutive_failures: e.consecutiveFailures,
      }));
      const text =
        rows.length === 0
          ? 'No webhook endpoints'
          : rows
              .map(
                (r) =>
                  `${r.id}  ${r.domain.padEnd(9)} ${r.status.padEnd(8)} ${r.url}  [${r.event_types.join(', ')}]${r.disabled_reason ? `\n    ${r.disabled_reason}` : ''}`,
              )
              .join('\n');
      return { json: { endpoints: rows }, text };
    },
  },
  {
    name: 'outbox status',
    description: 'Webhook outbox backlog: events not yet dispatched, deliveries pending / failed / delivered',
    usage: '[--json]',
    options: {},
    async run({ db }) {
      const { EventRecord, WebhookDelivery, WebhookDeliveryStatus } = await import('./entities.js');
      const em = db.em();
      const [undispatched, pending, failed, delivered] = await Promise.all([
        em.count(EventRecord, { dispatchedAt: null }),
        em.count(WebhookDelivery, { status: WebhookDeliveryStatus.PENDING }),
        em.count(WebhookDelivery, { status: WebhookDeliveryStatus.FAILED }),
        em.count(WebhookDelivery, { status: WebhookDeliveryStatus.DELIVERED }),
      ]);
      const oldest = await em.findOne(
        WebhookDelivery,
        { status: WebhookDeliveryStatus.PENDING },
        { orderBy: { createdAt: 'asc' } },
      );
      const json = {
        undispatched_events: undispatched,
        pending,
        failed,
        delivered,
        oldest_pending_at: oldest?.createdAt.toISOString() ?? null,
      };
      const text = [
        `Events not yet dispatched: ${undispatched}`,
        `Deliveries pending:        ${pending}${oldest ? ` (oldest queued ${oldest.createdAt.toISOString()})` : ''}`,
        `Deliveries failed:         ${failed}`,
        `Deliveries delivered:      ${delivered}`,
      ].join('\n');
      return { json, text };
    },
  },
  {
    name: 'events purge',
    description:
      'Delete delivered/failed webhook deliveries and dispatched events older than the retention window (never ones still retrying)',
    usage: '[--older-than 30d] [--json]',
    options: {
      'older-than': { description: 'Age to purge past, e.g. 30d (default: EVENT_RETENTION)', type: 'string' },
    },
    async run({ db, config, clock }, { options }) {
      const { purgeExpired } = await import('./retention.js');
      const raw = options['older-than'];
      let olderThanMs = config.eventRetentionMs;
      if (typeof raw === 'string') {
        try {
          olderThanMs = parseDuration(raw);
        } catch (e) {
          throw badInput('older-than', (e as Error).message);
        }
      }
      const result = await purgeExpired(db, new Date(clock.now().getTime() - olderThanMs));
      return {
        json: {
          older_than_seconds: olderThanMs / 1000,
          cutoff: result.cutoff.toISOString(),
          deliveries_deleted: result.deliveries,
          events_deleted: result.events,
        },
        text: `Deleted ${result.deliveries} webhook deliveries and ${result.events} events from before ${result.cutoff.toISOString()}`,
      };
    },
  },
];
