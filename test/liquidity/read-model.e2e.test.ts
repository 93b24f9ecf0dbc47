import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiKey } from '../../src/accounts/service.js';
import { openAppDatabase } from '../../src/database.js';
import { loadConfig } from '../../src/config.js';
import { systemClock } from '../../src/kernel/clock.js';
import { liquidityCommands } from '../../src/liquidity/cli.js';
import {
  describeEachDialect,
  describeWithPostgres,
  describeWithRedis,
  TEST_REDIS_URL,
} from '../helpers/env.js';
import { createKey, gql, rest, startTestServer, type Json, type TestServer } from '../helpers/server.js';
import { keysOf, startGatewayProcess, type GatewayProcess } from '../events/process.js';
import { createSeededTestDatabase, type TestDatabase } from '../helpers/db.js';
import { noLiveEvents } from '../../src/kernel/events.js';

const INGEST = `mutation Ingest($data: String!) {
  ingestLiquidityMetrics(format: CSV, data: $data) { rows daysScored }
}`;
const HEADER = 'slug,date,aum_usd,volume_usd,holders,redemption_queue_usd,nav_deviation_bps';
const today = () => new Date().toISOString().slice(0, 10);
/** A collapse of assets under management: the score of that day is far below the seed's. */
const collapse = (slug: string, date = today()) => `${HEADER}\n${slug},${date},1000,0,1,1000,900\n`;

/** What every door says about one protocol's latest score. */
async function latest(url: string, key: string, slug: string): Promise<Json> {
  const [one, list, history, market, graph] = await Promise.all([
    rest(url, `/v1/protocols/${slug}`, { key }),
    rest(url, '/v1/scores?limit=100', { key }),
    rest(url, `/v1/scores/${slug}/history`, { key }),
    rest(url, '/v1/market', { key }),
    gql(
      url,
      `{ score(slug: "${slug}") { asOf score } protocol(slug: "${slug}") { scoreAsOf liquidityScore } }`,
      {
        key,
      },
    ),
  ]);
  const listed = (list.body as Json[]).find((s) => s.slug === slug);
  const data = graph.body.data as Json;
  return {
    rest: { asOf: one.body.score_as_of, score: one.body.liquidity_score },
    scores: { asOf: listed?.as_of, score: listed?.score },
    history: { asOf: history.body.points.at(-1).date, score: history.body.points.at(-1).score },
    marketAsOf: market.body.as_of,
    graphql: { asOf: data?.score?.asOf, score: data?.score?.score },
    graphqlProtocol: {
      asOf: data?.protocol?.scoreAsOf,
      score: data?.protocol?.liquidityScore,
    },
  };
}

/** Every door agrees on the day and the score. */
function expectEverywhere(seen: Json, asOf: string, score: number): void {
  for (const door of ['rest', 'scores', 'history', 'graphql', 'graphqlProtocol'])
    expect(seen[door], door).toEqual({ asOf, score });
  expect(seen.marketAsOf).toBe(asOf);
}

/** The probes below poll a gateway many times a second: beyond the Analyst plan's per-minute budget. */
const UNLIMITED = { LIMIT_ANALYST_PER_MINUTE: '100000000', LIMIT_ANALYST_PER_MONTH: 'unlimited' };

async function until<T>(probe: () => Promise<T>, done: (v: T) => boolean, ms: number): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await probe();
    if (done(value) || Date.now() > deadline) return value;
    await new Promise((r) => setTimeout(r, 50));
  }
}

describeEachDialect('liquidity read model in one process', (dialect) => {
  let server: TestServer;
  let analyst: string;
  let admin: string;
  beforeAll(async () => {
    server = await startTestServer({ dialect });
    analyst = server.key('ANALYST');
    admin = (await createKey(server, { plan: 'INSTITUTIONAL', scopes: 'admin' })).secret;
  });
  afterAll(() => server?.close());

  it('serves an ingestion through the API on the very next request, through every door', async () => {
    const before = await latest(server.url, analyst, 'harbor-treasury');
    expect(before.rest.asOf).not.toBe(today());
    const res = await gql(server.url, INGEST, {
      key: admin,
      variables: { data: collapse('harbor-treasury') },
    });
    expect(res.body.errors).toBeUndefined();
    const after = await latest(server.url, analyst, 'harbor-treasury');
    expect(after.rest.score).toBeLessThan(before.rest.score - 10);
    expectEverywhere(after, today(), after.rest.score);
  });

  it('serves a protocol write on the next request, in lists and filters too', async () => {
    const LISTED = '{ protocols(category: COMMODITY, first: 100) { totalCount nodes { slug yieldPct } } }';
    // The same reads before the write: their answers are kept (src/gateway/pipeline/answers.ts) and must
    // not be served once the write has committed.
    expect((await rest(server.url, '/v1/protocols/meridian-bills', { key: analyst })).status).toBe(200);
    expect((await gql(server.url, LISTED, { key: analyst })).body.errors).toBeUndefined();
    expect((await rest(server.url, '/v1/market?category=commodity', { key: analyst })).status).toBe(200);
    const res = await gql(
      server.url,
      `mutation { updateProtocol(slug: "meridian-bills", input: { yieldPct: 9.75, category: "COMMODITY" }) { slug } }`,
      { key: admin },
    );
    expect(res.body.errors).toBeUndefined();
    const one = await rest(server.url, '/v1/protocols/meridian-bills', { key: analyst });
    expect(one.body).toMatchObject({ yield_pct: 9.75, category: 'commodity' });
    const listed = await gql(server.url, LISTED, { key: analyst });
    const protocols = (listed.body.data as Json).protocols;
    expect(protocols.nodes).toContainEqual({ slug: 'meridian-bills', yieldPct: 9.75 });
    const market = await rest(server.url, '/v1/market?category=commodity', { key: analyst });
    expect(market.body.protocol_count).toBe(protocols.totalCount);
  });

  it('serves a write made through another entity manager of the same database (the CLI in this process)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tidegate-read-model-'));
    try {
      const file = join(dir, 'day.csv');
      const tomorrow = new Date(Date.now() + 86_400_000).toISOString().slice(0, 10);
      writeFileSync(file, collapse('atlas-gilt', tomorrow));
      const cmd = liquidityCommands.find((c) => c.name === 'liquidity ingest')!;
      // The server's clock is the system clock: a row dated tomorrow is refused unless the CLI's clock agrees.
      const clock = { now: () => new Date(Date.now() + 86_400_000) };
      await cmd.run(
        { config: server.config, db: server.database.db, clock, versions: server.app.services.versions },
        { options: { json: true }, positionals: [file] },
      );
      const seen = await latest(server.url, analyst, 'atlas-gilt');
      expectEverywhere(seen, tomorrow, seen.rest.score);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('never serves half of an ingestion: every answer read during one has every protocol on one day', async () => {
    const protocols = (
      (await rest(server.url, '/v1/protocols?limit=100', { key: analyst })).body as Json[]
    ).map((p) => p.slug as string);
    const day = new Date(Date.now() + 2 * 86_400_000).toISOString().slice(0, 10);
    const csv = `${HEADER}\n${protocols.map((slug) => `${slug},${day},5000000,10000,100,0,1`).join('\n')}\n`;
    const clock = { now: () => new Date(Date.now() + 2 * 86_400_000) };
    const { ingestMetrics } = await import('../../src/liquidity/ingest.js');
    const writing = ingestMetrics(
      { em: server.database.db.em(), clock, events: noLiveEvents, versions: server.app.services.versions },
      csv,
      'CSV',
    );
    const days = new Set<string>();
    const reads: Array<Promise<void>> = [];
    for (let i = 0; i < 20; i++) {
      reads.push(
        rest(server.url, '/v1/scores?limit=100', { key: analyst }).then((r) => {
          const asOf = new Set((r.body as Json[]).map((s) => s.as_of as string));
          expect(asOf.size, JSON.stringify([...asOf])).toBe(1);
          days.add([...asOf][0]!);
        }),
      );
      await new Promise((r) => setTimeout(r, 5));
    }
    await writing;
    await Promise.all(reads);
    expect((await rest(server.url, '/v1/scores?limit=1', { key: analyst })).body[0].as_of).toBe(day);
  });
});

/** A gateway process can take tens of seconds to start on a loaded machine. */
const STARTUP_MS = 120_000;

describe('liquidity read model across processes on SQLite', () => {
  /** The demo's database; its connection here is the CLI's. */
  let file: TestDatabase;
  let gateway: GatewayProcess;
  let key: string;
  beforeAll(async () => {
    const seeded = await createSeededTestDatabase('sqlite');
    file = seeded.database;
    key = keysOf(seeded.demo).ANALYST!.key;
    gateway = await startGatewayProcess(
      { ...UNLIMITED, DATABASE_URL: file.url, READ_MODEL_POLL: '1s' },
      STARTUP_MS,
    );
  }, 2 * STARTUP_MS);
  afterAll(async () => {
    await gateway?.stop();
    await file?.drop();
  });

  it('a CLI ingestion reaches the running gateway within READ_MODEL_POLL', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tidegate-read-model-'));
    try {
      const csv = join(dir, 'day.csv');
      writeFileSync(csv, collapse('harbor-treasury'));
      const cmd = liquidityCommands.find((c) => c.name === 'liquidity ingest')!;
      const config = loadConfig({ DATABASE_URL: file.url });
      await cmd.run(
        { config, db: file.db, clock: systemClock },
        { options: { json: true }, positionals: [csv] },
      );
      const started = Date.now();
      const seen = await until(
        () => latest(gateway.url, key, 'harbor-treasury'),
        (s) => s.rest.asOf === today(),
        5_000,
      );
      expectEverywhere(seen, today(), seen.rest.score);
      // One poll interval plus a rebuild; a second of slack for a busy machine.
      expect(Date.now() - started).toBeLessThan(2_500);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describeWithPostgres('liquidity read model across gateways on one PostgreSQL', () => {
  describeWithRedis('with and without the Redis bus', () => {
    let database: TestDatabase;
    /** A and B share the bus and poll only every minute: what reaches B within seconds came by the bus. */
    let a: GatewayProcess;
    let b: GatewayProcess;
    /** No bus at all: only the version poll keeps it in step. */
    let c: GatewayProcess;
    let analyst: string;
    let admin: string;
    const prefix = `tidegate-test-${randomBytes(4).toString('hex')}`;
    beforeAll(async () => {
      const seeded = await createSeededTestDatabase('postgresql');
      database = seeded.database;
      const env = { ...UNLIMITED, DATABASE_URL: database.url, READ_MODEL_POLL: '60s' };
      const bus = { REDIS_URL: TEST_REDIS_URL!, REDIS_PREFIX: prefix };
      [a, b, c] = await Promise.all([
        startGatewayProcess({ ...env, ...bus }, STARTUP_MS),
        startGatewayProcess({ ...env, ...bus }, STARTUP_MS),
        startGatewayProcess({ ...env, READ_MODEL_POLL: '1s' }, STARTUP_MS),
      ]);
      const keys = keysOf(seeded.demo);
      analyst = keys.ANALYST!.key;
      admin = (
        await createApiKey(
          { em: database.db.em(), clock: systemClock },
          { maxActiveKeys: 100, rotationGraceMs: 0 },
          { accountId: keys.INSTITUTIONAL!.accountId, scopes: 'admin' },
        )
      ).secret;
    }, 3 * STARTUP_MS);
    afterAll(async () => {
      await Promise.all([a?.stop(), b?.stop(), c?.stop()]);
      await database?.drop();
    });

    it('an ingestion through the API of A is served by B through the bus and by C through the poll', async () => {
      // Both read first, so each holds a snapshot from before the ingestion.
      for (const g of [a, b, c])
        expect((await latest(g.url, analyst, 'harbor-treasury')).rest.asOf).not.toBe(today());
      const res = await gql(a.url, INGEST, { key: admin, variables: { data: collapse('harbor-treasury') } });
      expect(res.body.errors).toBeUndefined();
      const started = Date.now();
      const onA = await latest(a.url, analyst, 'harbor-treasury');
      expectEverywhere(onA, today(), onA.rest.score);
      const onB = await until(
        () => latest(b.url, analyst, 'harbor-treasury'),
        (s) => s.rest.asOf === today(),
        5_000,
      );
      expectEverywhere(onB, today(), onA.rest.score);
      expect(Date.now() - started).toBeLessThan(5_000);
      const onC = await until(
        () => latest(c.url, analyst, 'harbor-treasury'),
        (s) => s.rest.asOf === today(),
        5_000,
      );
      expectEverywhere(onC, today(), onA.rest.score);
    });

    it('a protocol written on B is served by A', async () => {
      const res = await gql(
        b.url,
        'mutation { updateProtocol(slug: "atlas-gilt", input: { yieldPct: 7.5 }) { slug } }',
        {
          key: admin,
        },
      );
      expect(res.body.errors).toBeUndefined();
      const seen = await until(
        () => rest(a.url, '/v1/protocols/atlas-gilt', { key: analyst }),
        (r) => r.body.yield_pct === 7.5,
        5_000,
      );
      expect(seen.body.yield_pct).toBe(7.5);
    });

    it('a CLI ingestion reaches the gateway without a bus within READ_MODEL_POLL', async () => {
      const dir = mkdtempSync(join(tmpdir(), 'tidegate-read-model-'));
      const cli = await openAppDatabase(database.url);
      try {
        const csv = join(dir, 'day.csv');
        const tomorrow = new Date(Date.now() + 86_400_000).toISOString().slice(0, 10);
        writeFileSync(csv, collapse('meridian-bills', tomorrow));
        const cmd = liquidityCommands.find((x) => x.name === 'liquidity ingest')!;
        const clock = { now: () => new Date(Date.now() + 86_400_000) };
        await cmd.run(
          { config: loadConfig({ DATABASE_URL: database.url }), db: cli, clock },
          { options: { json: true }, positionals: [csv] },
        );
        const started = Date.now();
        const seen = await until(
          () => rest(c.url, '/v1/protocols/meridian-bills', { key: analyst }),
          (r) => r.body.score_as_of === tomorrow,
          5_000,
        );
        expect(seen.body.score_as_of).toBe(tomorrow);
        expect(Date.now() - started).toBeLessThan(2_500);
      } finally {
        await cli.close();
        rmSync(dir, { recursive: true, force: true });
      }
    });
  });
});
