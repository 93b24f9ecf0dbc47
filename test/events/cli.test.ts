import { afterAll, beforeAll, expect, it } from 'vitest';
import { createAccount } from '../../src/accounts/service.js';
import { loadConfig } from '../../src/config.js';
import { WebhookDomain } from '../../src/events/catalog.js';
import { eventsCommands } from '../../src/events/cli.js';
import { stageEvents } from '../../src/events/stage.js';
import { registerEndpoint } from '../../src/events/webhooks.js';
import { systemClock } from '../../src/kernel/clock.js';
import { Plan } from '../../src/kernel/plans.js';
import { createTestDatabase, type TestDatabase } from '../helpers/db.js';
import { describeEachDialect } from '../helpers/env.js';

describeEachDialect('events CLI', (dialect) => {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await createTestDatabase(dialect);
  });
  afterAll(() => database?.drop());

  const run = (name: string, options: Record<string, string | boolean> = {}) => {
    const command = eventsCommands.find((c) => c.name === name)!;
    return command.run(
      { db: database.db, config: loadConfig({}), clock: systemClock },
      { options, positionals: [] },
    );
  };

  it('lists endpoints without secrets and reports the outbox backlog', async () => {
    const account = await createAccount(database.db.em(), systemClock, {
      name: 'Ops',
      plan: Plan.PROFESSIONAL,
    });
    const principal = {
      accountId: account.id,
      plan: Plan.PROFESSIONAL,
      scopes: new Set(['webhooks:manage']),
      credential: { kind: 'api_key' as const, id: 'k' },
    };
    const { secret } = await registerEndpoint(
      database.db.em(),
      principal,
      WebhookDomain.LIQUIDITY,
      { url: 'http://127.0.0.1:9/hook', eventTypes: ['tier_change'] },
      {
        clock: systemClock,
        config: loadConfig({ WEBHOOK_ALLOW_PRIVATE: 'true' }),
      },
    );
    const listed = await run('webhooks list', { account: account.id });
    expect(listed.json).toMatchObject({
      endpoints: [
        { account_id: account.id, domain: 'LIQUIDITY', status: 'ACTIVE', event_types: ['tier_change'] },
      ],
    });
    expect(JSON.stringify(listed.json) + listed.text).not.toContain(secret);

    await database.db
      .em()
      .transactional(async (tx) =>
        stageEvents(tx, systemClock, [{ type: 'tier_change', payload: { slug: 'x' } }]),
      );
    const status = await run('outbox status');
    expect(status.json).toEqual({
      undispatched_events: 1,
      pending: 0,
      failed: 0,
      delivered: 0,
      oldest_pending_at: null,
    });
    expect(status.text).toMatch(/Events not yet dispatched: 1/);
  });
});
