import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EventRecord } from '../../src/events/entities.js';
import { ManualClock } from '../../src/kernel/clock.js';
import { liquidityCommands } from '../../src/liquidity/cli.js';
import {
  LiquidityDay,
  ScoringProfile,
  ScoringProfileChange,
  Watchlist,
  WatchlistAlert,
} from '../../src/liquidity/entities.js';
import { describeEachDialect } from '../helpers/env.js';
import { createKey, gql, rest, startTestServer, type Json, type TestServer } from '../helpers/server.js';

const INGEST = `mutation Ingest($format: IngestFormat!, $data: String!) {
  ingestLiquidityMetrics(format: $format, data: $data) { rows protocols daysScored alerts events }
}`;

describeEachDialect('liquidity writes: watchlists, scoring profiles, ingestion', (dialect) => {
  let server: TestServer;
  let pro: string;
  let admin: string;
  const clock = new ManualClock('2026-06-15T10:00:00Z');
  const count = async (entity: Parameters<ReturnType<TestServer['database']['db']['em']>['count']>[0]) =>
    server.database.db.em().count(entity, {});

  beforeAll(async () => {
    server = await startTestServer({ clock, dialect });
    pro = server.key('PROFESSIONAL');
    admin = (await createKey(server, { plan: 'INSTITUTIONAL', scopes: 'admin' })).secret;
  });
  afterAll(() => server?.close());

  describe('watchlist', () => {
    it('shows defaults before the first change and rejects an unknown slug without writing anything', async () => {
      const before = await rest(server.url, '/v1/watchlist', { key: pro });
      expect(before.body).toMatchObject({
        id: null,
        score_change_threshold: 5,
        tier_shift: true,
        aum_change_pct: 10,
        compliance_events: true,
        protocols: [],
      });
      const bad = await rest(server.url, '/v1/watchlist', {
        method: 'POST',
        key: pro,
        body: { add: ['harbor-treasury', 'nope'] },
      });
      expect(bad.status).toBe(404);
      expect(bad.body.error.message).toBe("Protocol 'nope' was not found");
      const negative = await rest(server.url, '/v1/watchlist', {
        method: 'POST',
        key: pro,
        body: { score_change_threshold: -3 },
      });
      expect(negative.status).toBe(400);
      // The REST caller sent score_change_threshold: the message names that spelling (and GraphQL's).
      expect(negative.body.error.message).toBe(
        'scoreChangeThreshold / score_change_threshold: must be between 0 and 100 (0 or null turns the alert off; got -3)',
      );
      expect(await count(Watchlist)).toBe(0);
    });

    it('adds protocols and sets thresholds with POST, removes with DELETE', async () => {
      const res = await rest(server.url, '/v1/watchlist', {
        method: 'POST',
        key: pro,
        body: { add: ['harbor-treasury', 'meridian-bills'], score_change_threshold: 1, aum_change_pct: 5 },
      });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({
        id: expect.any(String),
        score_change_threshold: 1,
        aum_change_pct: 5,
      });
      expect(res.body.protocols.map((p: Json) => p.slug)).toEqual(['harbor-treasury', 'meridian-bills']);
      const del = await rest(server.url, '/v1/watchlist/meridian-bills', { method: 'DELETE', key: pro });
      expect(del.status).toBe(204);
      const again = await rest(server.url, '/v1/watchlist/meridian-bills', { method: 'DELETE', key: pro });
      expect(again.status).toBe(404);
      const now = await rest(server.url, '/v1/watchlist', { key: pro });
      expect(now.body.protocols.map((p: Json) => p.slug)).toEqual(['harbor-treasury']);
    });
  });

  describe('scoring profiles', () => {
    const weights = { aum: 0.1, redemption: 0.1, volume: 0.1, issuer: 0.1, jurisdiction: 0.6 };

    it('is Professional or higher', async () => {
      const res = await rest(server.url, '/v1/scoring-profiles', {
        method: 'POST',
        key: server.key('ANALYST'),
        body: { name: 'x', weights },
      });
      expect(res.status).toBe(402);
      expect(res.body.error.message).toMatch(/Professional plan or higher/);
    });

    it('rejects bad weights and caps with 400 naming the field, writing nothing', async () => {
      for (const [body, pattern] of [
        [{ name: 'a', weights: { ...weights, jurisdiction: 0.5 } }, /weights: must sum to 1 \(got 0.9\)/],
        [
          { name: 'a', weights: { ...weights, aum: -0.1, jurisdiction: 0.8 } },
          /weights.aum: must be a non-negative number/,
        ],
        [{ name: 'a', weights: { aum: 1 } }, /^weights.redemption: is required \(give all five weights\)$/],
        [
          { name: 'a', weights, penalty_caps: { queue: 80 } },
          /^penaltyCaps.queue \/ penalty_caps.queue: must be between 0 and 50 \(got 80\)$/,
        ],
        [{ name: '', weights }, /name: must be 1–100 characters/],
      ] as const) {
        const res = await rest(server.url, '/v1/scoring-profiles', { method: 'POST', key: pro, body });
        expect(res.status, JSON.stringify(body)).toBe(400);
        expect(res.body.error.message).toMatch(pattern);
      }
      expect(await count(ScoringProfile)).toBe(0);
      expect(await count(ScoringProfileChange)).toBe(0);
    });

    it('creates, scores under, updates and deletes a profile, logging before and after each time', async () => {
      const created = await rest(server.url, '/v1/scoring-profiles', {
        method: 'POST',
        key: pro,
        body: { name: 'Regulation first', weights, penalty_caps: { staleness: 5 } },
      });
      expect(created.status).toBe(201);
      expect(created.body).toMatchObject({
        name: 'Regulation first',
        weights,
        penalty_caps: { staleness: 5, queue: 20 },
      });
      const id = created.body.id as string;
      const dup = await rest(server.url, '/v1/scoring-profiles', {
        method: 'POST',
        key: pro,
        body: { name: 'Regulation first', weights },
      });
      expect(dup.status).toBe(409);

      const scored = await rest(server.url, `/v1/scores?limit=5&profile_id=${id}`, { key: pro });
      expect(scored.status).toBe(200);
      expect(scored.body[0]).toMatchObject({ profile_id: id, weights });
      const plain = await rest(server.url, '/v1/scores?limit=5', { key: pro });
      expect(scored.body.map((s: Json) => s.audit_id)).not.toEqual(plain.body.map((s: Json) => s.audit_id));
      // A profile-weighted audit id resolves to the inputs plus the profile's weights and caps.
      const audit = await rest(server.url, `/v1/audits/${scored.body[0].audit_id}`, { key: pro });
      expect(audit.status).toBe(200);
      expect(audit.body).toMatchObject({
        weights,
        penalty_caps: { staleness: 5 },
        result: { score: scored.body[0].score, profile_id: id },
      });
      const history = await rest(server.url, `/v1/scores/harbor-treasury/history?profile_id=${id}`, {
        key: pro,
      });
      expect(history.body.profile_id).toBe(id);
      const exported = await rest(server.url, `/v1/export?format=json&profile_id=${id}`, { key: pro });
      expect(exported.body[0].profile_id).toBe(id);
      const foreign = await rest(server.url, `/v1/scores?profile_id=${id}`, {
        key: server.key('INSTITUTIONAL'),
      });
      expect(foreign.status).toBe(404);

      const updated = await rest(server.url, `/v1/scoring-profiles/${id}`, {
        method: 'PUT',
        key: pro,
        body: { penalty_caps: { queue: 10 } },
      });
      expect(updated.status).toBe(200);
      expect(updated.body.penalty_caps).toMatchObject({ queue: 10, staleness: 5 });
      // Scores under a profile are never kept (src/liquidity/answers.ts): the new caps count at once.
      const rescored = await rest(server.url, `/v1/scores?limit=5&profile_id=${id}`, { key: pro });
      expect(rescored.body.map((s: Json) => s.audit_id)).not.toEqual(
        scored.body.map((s: Json) => s.audit_id),
      );
      const del = await rest(server.url, `/v1/scoring-profiles/${id}`, { method: 'DELETE', key: pro });
      expect(del.status).toBe(204);
      expect(
        (await rest(server.url, `/v1/scoring-profiles/${id}`, { method: 'DELETE', key: pro })).status,
      ).toBe(404);

      const log = await gql(
        server.url,
        `{ scoringProfileChanges(id: "${id}") { action actor before after } }`,
        { key: pro },
      );
      const changes = log.body.data!.scoringProfileChanges as Json[];
      expect(changes.map((c) => c.action).sort()).toEqual(['CREATE', 'DELETE', 'UPDATE']);
      const update = changes.find((c) => c.action === 'UPDATE');
      expect(update.before.penaltyCaps.queue).toBe(20);
      expect(update.after.penaltyCaps.queue).toBe(10);
      expect(changes.find((c) => c.action === 'CREATE').before).toBeNull();
      expect(changes.find((c) => c.action === 'DELETE').after).toBeNull();
      expect(update.actor).toMatch(/^api_key:/);
      for (const bad of ['nope', '------------------------------------']) {
        const missing = await gql(server.url, `{ scoringProfileChanges(id: "${bad}") { action } }`, {
          key: pro,
        });
        expect(missing.body.errors?.[0]).toMatchObject({
          message: `Scoring profile '${bad}' was not found`,
          extensions: { code: 'NOT_FOUND' },
        });
        const put = await rest(server.url, `/v1/scoring-profiles/${bad}`, {
          method: 'PUT',
          key: pro,
          body: { name: 'x' },
        });
        expect(put.status).toBe(404);
      }
    });
  });

  describe('ingestion', () => {
    it('is admin only', async () => {
      const res = await gql(server.url, INGEST, {
        key: server.key('INSTITUTIONAL'),
        variables: { format: 'CSV', data: 'slug,date,aum_usd\n' },
      });
      expect(res.body.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
    });

    it('rejects a bad file whole, naming the line and field, and writes nothing', async () => {
      const days = await count(LiquidityDay);
      const events = await count(EventRecord);
      const cases: Array<[string, string, RegExp]> = [
        [
          'CSV',
          'slug,date,aum_usd\nharbor-treasury,2026-06-15,100\nmeridian-bills,2026-06-15,lots\n',
          /^aum_usd: line 3: must be a decimal number \(got 'lots'\)$/,
        ],
        [
          'CSV',
          'slug,date,aum_usd\nharbor-treasury,2026-06-15,0x10\n',
          /^aum_usd: line 2: must be a decimal number \(got '0x10'\)$/,
        ],
        [
          'CSV',
          'slug,date,aum_usd\nharbor-treasury,2026-06-31,100\n',
          /^date: line 2: must be a date YYYY-MM-DD \(got '2026-06-31'\)$/,
        ],
        [
          'CSV',
          'slug,date,aum_usd\nharbor-treasury,2026-06-16,100\n',
          /^date: line 2: must not be after today \(2026-06-15\) \(got 2026-06-16\)$/,
        ],
        [
          'CSV',
          'slug,date,aum_usd,last_attestation_date\nharbor-treasury,2026-06-15,100,2026-06-16\n',
          /^last_attestation_date: line 2: must not be after the row's date \(2026-06-15\) \(got 2026-06-16\)$/,
        ],
        [
          'CSV',
          'slug,date,aum_usd,regulatory_status\nharbor-treasury,2026-06-15,100,LICENSED\n',
          /^regulatory_status: line 2: must be one of REGISTERED, EXEMPT, PENDING, UNREGULATED \(got 'LICENSED'\)$/,
        ],
        [
          'CSV',
          'slug,date,aum_usd\nunknown-protocol,2026-06-15,100\n',
          /^slug: line 2: no active protocol 'unknown-protocol'$/,
        ],
        [
          'CSV',
          'slug,date,aum_usd\nharbor-treasury,2026-06-14,100\n',
          /^date: line 2: harbor-treasury already has reported data for 2026-06-14; send the file with replace to correct it$/,
        ],
        [
          'CSV',
          'slug,date,aum_usd,top_holder_pct\nharbor-treasury,2026-06-15,100,140\n',
          /^top_holder_pct: line 2: must be between 0 and 100 \(got 140\)$/,
        ],
        [
          'CSV',
          'slug,date,aum_usd,colour\nharbor-treasury,2026-06-15,100,red\n',
          /^colour: line 2: unknown field/,
        ],
        // Malformed CSV: the quote opened on line 3 is never closed.
        [
          'CSV',
          'slug,date,aum_usd\nharbor-treasury,2026-06-15,100\nmeridian-bills,"2026-06-15,100\natlas-gilt,2026-06-15,100\n',
          /^date: line 3: is not valid CSV: a quoted value that starts in this record is never closed$/,
        ],
        // A record spanning lines 3–4 is named by the line where it starts.
        [
          'CSV',
          'slug,date,aum_usd\nharbor-treasury,2026-06-15,100\nmeridian-bills,2026-06-15,"1\n2"\n',
          /^aum_usd: line 3: must not contain the control character U\+000A$/,
        ],
        [
          'JSON',
          '[{"slug":"harbor-treasury","date":"2026-06-15","aum_usd":1},{"slug":"harbor-treasury","date":"2026-06-15","aum_usd":2}]',
          /^date: item 2: a second row for harbor-treasury on 2026-06-15$/,
        ],
        [
          'JSON',
          '[{"slug":"harbor-treasury","date":"2026-06-15","aum_usd":1},{"slug":"meridian-bills","date":"2026-06-15","aum_usd":"0x10"}]',
          /^aum_usd: item 2: must be a decimal number \(got '0x10'\)$/,
        ],
        ['JSON', '{"slug":"x"}', /^file: JSON must be an array/],
      ];
      for (const [format, data, pattern] of cases) {
        const res = await gql(server.url, INGEST, { key: admin, variables: { format, data } });
        expect(res.body.errors?.[0]?.message, data).toMatch(pattern);
        expect(res.body.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
      }
      const located = await gql(server.url, INGEST, {
        key: admin,
        variables: { format: cases[0]![0], data: cases[0]![1] },
      });
      expect(located.body.errors?.[0]?.extensions).toMatchObject({ field: 'aum_usd', line: 3 });
      const item = await gql(server.url, INGEST, {
        key: admin,
        variables: { format: 'JSON', data: cases.at(-2)![1] },
      });
      expect(item.body.errors?.[0]?.extensions).toMatchObject({ field: 'aum_usd', item: 2 });
      expect(await count(LiquidityDay)).toBe(days);
      expect(await count(EventRecord)).toBe(events);
    });

    it('scores new days, stages domain events in the same transaction and raises watchlist alerts', async () => {
      const before = (await rest(server.url, '/v1/protocols/harbor-treasury', { key: pro })).body;
      const aum = Number(before.aum_usd);
      const csv = [
        'slug,date,aum_usd,volume_usd,holders,top_holder_pct,redemption_queue_usd,nav_deviation_bps,last_attestation_date,regulatory_status',
        `harbor-treasury,2026-06-15,${(aum * 0.4).toFixed(2)},1000,50,65,${(aum * 0.1).toFixed(0)},250,2026-01-01,`,
        'meridian-bills,2026-06-15,500000000,2000000,9000,12,100000,3,2026-06-01,UNREGULATED',
      ].join('\n');
      const res = await gql(server.url, INGEST, { key: admin, variables: { format: 'CSV', data: csv } });
      expect(res.body.errors).toBeUndefined();
      expect(res.body.data!.ingestLiquidityMetrics).toMatchObject({ rows: 2, protocols: 2, daysScored: 40 });

      const after = (await rest(server.url, '/v1/protocols/harbor-treasury', { key: pro })).body;
      expect(after.score_as_of).toBe('2026-06-15');
      expect(after.liquidity_score).toBeLessThan(before.liquidity_score - 15);
      const em = server.database.db.em();
      const events = (await em.find(EventRecord, {})).filter((e) => e.payload.asOf === '2026-06-15');
      const types = (slug: string) =>
        events
          .filter((e) => e.payload.slug === slug)
          .map((e) => e.type)
          .sort();
      expect(types('harbor-treasury')).toEqual(
        expect.arrayContaining([
          'aum_change',
          'circuit_breaker',
          'compliance_alert',
          'score_change',
          'tier_change',
        ]),
      );
      expect(types('meridian-bills')).toContain('compliance_alert');
      const score = events.find((e) => e.type === 'score_change' && e.payload.slug === 'harbor-treasury')!;
      expect(score.accountId).toBeNull();
      expect(score.payload).toMatchObject({
        protocolId: after.id,
        previousScore: before.liquidity_score,
        score: after.liquidity_score,
        auditId: expect.stringMatching(/^[0-9a-f]{64}$/),
        asOf: '2026-06-15',
      });
      const aumEvent = events.find((e) => e.type === 'aum_change' && e.payload.slug === 'harbor-treasury')!;
      expect(aumEvent.payload).toMatchObject({ previousAumUsd: aum.toFixed(2), changePct: -60 });
      const compliance = events.find(
        (e) => e.type === 'compliance_alert' && e.payload.slug === 'meridian-bills',
      )!;
      expect(compliance.payload).toMatchObject({ kind: 'REGULATORY_STATUS_CHANGED' });

      // The Professional account watches harbor-treasury: alerts were raised, with watchlist_alert events for that account.
      const alerts = await rest(server.url, '/v1/watchlist/alerts', { key: pro });
      expect(alerts.status).toBe(200);
      expect(alerts.body.map((a: Json) => a.kind).sort()).toEqual(
        expect.arrayContaining(['AUM_MOVE', 'COMPLIANCE', 'SCORE_CHANGE', 'TIER_SHIFT']),
      );
      expect(alerts.body.every((a: Json) => a.slug === 'harbor-treasury')).toBe(true);
      const alertEvents = events.filter((e) => e.type === 'watchlist_alert');
      expect(alertEvents).toHaveLength(alerts.body.length);
      const proAccount = server.demo.accounts.find((a) => a.plan === 'PROFESSIONAL')!.accountId;
      expect(alertEvents.every((e) => e.accountId === proAccount)).toBe(true);
      expect(alertEvents[0]!.payload).toMatchObject({
        watchlistId: expect.any(String),
        alertId: expect.any(String),
        slug: 'harbor-treasury',
        asOf: '2026-06-15',
      });
      const other = await rest(server.url, '/v1/watchlist/alerts', { key: server.key('INSTITUTIONAL') });
      expect(other.body).toEqual([]);
      expect(await em.count(WatchlistAlert, {})).toBe(alerts.body.length);
    });

    it('ingests from a file with the CLI; protocols without new data are carried forward and flagged stale', async () => {
      clock.set('2026-06-25T08:00:00Z');
      const dir = mkdtempSync(join(tmpdir(), 'tidegate-ingest-'));
      const file = join(dir, 'metrics.json');
      writeFileSync(
        file,
        JSON.stringify([
          {
            slug: 'atlas-gilt',
            date: '2026-06-25',
            aum_usd: 900000000,
            volume_usd: 5000000,
            holders: 12000,
            top_holder_pct: 8,
            redemption_queue_usd: 0,
            nav_deviation_bps: 1,
            last_attestation_date: '2026-06-20',
          },
        ]),
      );
      const cmd = liquidityCommands.find((c) => c.name === 'liquidity ingest')!;
      const out = await cmd.run(
        { config: server.config, db: server.database.db, clock, versions: server.app.services.versions },
        { options: { json: true }, positionals: [file] },
      );
      expect(out.json).toMatchObject({ rows: 1, protocols: 1, daysScored: 40 * 10 });
      const stale = await server.database.db
        .em()
        .find(EventRecord, { type: 'data_stale', occurredAt: clock.now() });
      // Every protocol except atlas-gilt is now 10+ days behind; the seed's stale ones were already flagged.
      expect(stale.length).toBeGreaterThanOrEqual(30);
      expect(stale.find((e) => e.payload.slug === 'atlas-gilt')).toBeUndefined();
      expect(stale[0]!.payload).toMatchObject({
        lastDataAt: expect.any(String),
        staleDays: expect.any(Number),
        asOf: '2026-06-25',
      });
      const history = await rest(server.url, '/v1/scores/harbor-treasury/history', { key: pro });
      expect(history.body.points.at(-1)).toMatchObject({ date: '2026-06-25' });
      // The same file again is a duplicate report; with --replace it is a correction that changes nothing.
      await expect(
        cmd.run(
          { config: server.config, db: server.database.db, clock, versions: server.app.services.versions },
          { options: {}, positionals: [file] },
        ),
      ).rejects.toThrow(
        'date: item 1: atlas-gilt already has reported data for 2026-06-25; send the file with replace to correct it',
      );
      const again = await cmd.run(
        { config: server.config, db: server.database.db, clock, versions: server.app.services.versions },
        { options: { json: true, replace: true }, positionals: [file] },
      );
      expect(again.json).toMatchObject({ rows: 1, daysScored: 0, events: 0 });
      await expect(
        cmd.run(
          { config: server.config, db: server.database.db, clock, versions: server.app.services.versions },
          { options: {}, positionals: [join(dir, 'metrics.txt')] },
        ),
      ).rejects.toThrow(/format: must be csv or json/);
    });
  });
});
