import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { ManualClock } from '../../src/kernel/clock.js';
import { liquidityCommands } from '../../src/liquidity/cli.js';
import { Protocol, ProtocolChange } from '../../src/liquidity/entities.js';
import { describeEachDialect } from '../helpers/env.js';
import { createKey, gql, rest, startTestServer, type Json, type TestServer } from '../helpers/server.js';

const CREATE = `mutation Create($input: ProtocolInput!) {
  createProtocol(input: $input) { id slug name category active auditor chains aumUsd liquidityScore redemptionFrequency minimumInvestmentUsd website }
}`;
const UPDATE = `mutation Update($slug: String!, $input: ProtocolInput!) {
  updateProtocol(slug: $slug, input: $input) { slug active auditor redemptionFrequency noticePeriodDays }
}`;
const INGEST = `mutation Ingest($data: String!) {
  ingestLiquidityMetrics(format: CSV, data: $data) { rows daysScored }
}`;

const VALID = {
  slug: 'quayside-notes',
  name: 'Quayside Notes',
  category: 'treasury',
  tokenSymbol: 'qsn',
  issuer: 'Quayside Issuer Ltd.',
  jurisdiction: 'ie',
  regulatoryStatus: 'registered',
  custodian: 'Anchor Trust Co.',
  qualifiedCustodian: true,
  auditor: 'Morrow Audit',
  governanceModel: 'corporate board',
  governanceMaturity: 'mature',
  chains: ['Ethereum', 'base'],
  tokenStandard: 'erc-20',
  redemptionFrequency: 'daily',
  noticePeriodDays: 1,
  redemptionGates: false,
  minimumInvestmentUsd: '10000',
  yieldPct: 4.6,
  yieldAttribution: [{ source: 'Government bill coupons', sharePct: 100 }],
  launchDate: '2025-03-01',
  kycRequired: true,
  accreditedOnly: false,
  sanctionsScreening: true,
  regulatoryFilings: [{ regulator: 'CBI', reference: 'C-1234', filedOn: '2025-02-01' }],
  website: 'https://quayside.example',
};

describeEachDialect('liquidity protocol onboarding', (dialect) => {
  let server: TestServer;
  let admin: string;
  const clock = new ManualClock('2026-06-15T10:00:00Z');
  const em = () => server.database.db.em();
  const counts = async () => [await em().count(Protocol, {}), await em().count(ProtocolChange, {})];

  beforeAll(async () => {
    server = await startTestServer({ clock, dialect });
    admin = (await createKey(server, { plan: 'INSTITUTIONAL', scopes: 'admin' })).secret;
  });
  afterAll(() => server?.close());

  it('is admin only', async () => {
    const before = await counts();
    const res = await gql(server.url, CREATE, {
      key: server.key('INSTITUTIONAL'),
      variables: { input: VALID },
    });
    expect(res.body.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
    expect(await counts()).toEqual(before);
  });

  it('rejects every kind of bad profile with a 400 naming the field, writing nothing', async () => {
    const before = await counts();
    const { tokenSymbol: _omitted, ...withoutSymbol } = VALID;
    const cases: Array<[Record<string, unknown>, string]> = [
      [withoutSymbol, 'tokenSymbol: is required'],
      [
        { ...VALID, slug: 'Quayside Notes' },
        "slug: must be 2–80 lower-case letters, digits and single hyphens, e.g. harbor-treasury (got 'Quayside Notes')",
      ],
      [
        { ...VALID, category: 'bonds' },
        "category: must be one of TREASURY, PRIVATE_CREDIT, REAL_ESTATE, COMMODITY, INFRASTRUCTURE (got 'bonds')",
      ],
      [
        { ...VALID, jurisdiction: 'USA' },
        "jurisdiction: must be an ISO 3166-1 alpha-2 country code (got 'USA')",
      ],
      [{ ...VALID, noticePeriodDays: 400 }, 'noticePeriodDays: must be between 0 and 365 (got 400)'],
      [
        { ...VALID, minimumInvestmentUsd: '0x10' },
        "minimumInvestmentUsd: must be a decimal number (got '0x10')",
      ],
      [
        { ...VALID, minimumInvestmentUsd: '12.5' },
        'minimumInvestmentUsd: must be whole US dollars (got 12.5)',
      ],
      [{ ...VALID, yieldPct: 120 }, 'yieldPct: must be between 0 and 100 (got 120)'],
      [{ ...VALID, launchDate: '2026-02-30' }, "launchDate: must be a date YYYY-MM-DD (got '2026-02-30')"],
      [
        { ...VALID, launchDate: '2026-07-01' },
        'launchDate: must not be after today (2026-06-15) (got 2026-07-01)',
      ],
      [
        { ...VALID, website: 'ftp://quayside.example' },
        "website: must be an http or https URL (got 'ftp://quayside.example')",
      ],
      [{ ...VALID, website: 'quayside' }, "website: must be an absolute http(s) URL (got 'quayside')"],
      [{ ...VALID, chains: [] }, 'chains: must name 1–20 chains (got 0)'],
      [{ ...VALID, chains: ['base', 'BASE'] }, 'chains: must not name a chain twice'],
      [
        { ...VALID, yieldAttribution: [{ source: 'Coupons', sharePct: 90 }] },
        'yieldAttribution: shares must add up to 100 (got 90)',
      ],
      [
        { ...VALID, regulatoryFilings: [{ regulator: 'CBI', reference: 'C-1', filedOn: 'soon' }] },
        'regulatoryFilings: item 1: filedOn must be a date YYYY-MM-DD from 1900 to 2199',
      ],
      [
        { ...VALID, tokenStandard: 'ERC 20!' },
        "tokenStandard: must be a token standard such as ERC-20, ERC-3643 or SPL (got 'ERC 20!')",
      ],
      [
        { ...VALID, regulatoryFilings: [{ regulator: 'CBI', reference: 'C-1', filedOn: '2026-07-01' }] },
        'regulatoryFilings: item 1: filedOn must not be after today (2026-06-15)',
      ],
      [
        { ...VALID, yieldAttribution: [{ source: ' ', sharePct: 100 }] },
        'yieldAttribution: item 1: source must be 1–100 characters',
      ],
      [
        { ...VALID, yieldAttribution: [{ source: 'Coupons', sharePct: 150 }] },
        'yieldAttribution: item 1: sharePct must be a number between 0 and 100',
      ],
      [
        { ...VALID, chains: ['Ether Eum'] },
        'chains: item 1 must be a chain name such as ethereum or base (got "Ether Eum")',
      ],
      [{ ...VALID, tokenSymbol: 'QS N' }, "tokenSymbol: must be 1–16 letters, digits or dots (got 'QS N')"],
      [
        { ...VALID, governanceModel: '9 lives' },
        "governanceModel: must be an upper-case name such as CORPORATE_BOARD, TRUSTEE, DAO or MULTISIG (got '9 lives')",
      ],
    ];
    for (const [input, message] of cases) {
      const res = await gql(server.url, CREATE, { key: admin, variables: { input } });
      expect(res.body.errors?.[0]?.message, message).toBe(message);
      expect(res.body.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
    }
    const taken = await gql(server.url, CREATE, {
      key: admin,
      variables: { input: { ...VALID, slug: 'harbor-treasury' } },
    });
    expect(taken.body.errors?.[0]).toMatchObject({
      message: "A protocol with slug 'harbor-treasury' already exists",
      extensions: { code: 'CONFLICT', field: 'slug' },
    });
    expect(await counts()).toEqual(before);
  });

  it('creates a protocol, logs it, and scores it from its first ingested day', async () => {
    const res = await gql(server.url, CREATE, { key: admin, variables: { input: VALID } });
    expect(res.body.errors).toBeUndefined();
    expect(res.body.data!.createProtocol).toMatchObject({
      slug: 'quayside-notes',
      category: 'TREASURY',
      active: true,
      chains: ['base', 'ethereum'],
      aumUsd: '0.00',
      liquidityScore: null,
      redemptionFrequency: 'DAILY',
      minimumInvestmentUsd: '10000.00',
      website: 'https://quayside.example/',
    });
    const profile = await rest(server.url, '/v1/protocols/quayside-notes', { key: admin });
    expect(profile.body).toMatchObject({
      token_symbol: 'QSN',
      jurisdiction: 'IE',
      governance_model: 'CORPORATE_BOARD',
    });

    const changes = await gql(
      server.url,
      '{ protocolChanges(slug: "quayside-notes") { action actor before after } }',
      {
        key: admin,
      },
    );
    const [created] = changes.body.data!.protocolChanges as Json[];
    expect(created).toMatchObject({
      action: 'CREATE',
      before: null,
      actor: expect.stringMatching(/^api_key:/),
    });
    expect(created.after).toMatchObject({ slug: 'quayside-notes', minimumInvestmentUsd: '10000.00' });

    const ingest = await gql(server.url, INGEST, {
      key: admin,
      variables: {
        data: 'slug,date,aum_usd,last_attestation_date\nquayside-notes,2026-06-13,250000000,2026-06-10\n',
      },
    });
    expect(ingest.body.errors).toBeUndefined();
    // Its own day plus one carried forward to the newest day (2026-06-14 is every other protocol's latest).
    expect(ingest.body.data!.ingestLiquidityMetrics).toMatchObject({ rows: 1, daysScored: 2 });
    const score = (await rest(server.url, '/v1/scores?limit=100', { key: admin })).body.find(
      (s: Json) => s.slug === 'quayside-notes',
    );
    expect(score).toMatchObject({ as_of: '2026-06-14', data_date: '2026-06-13' });
  });

  it('updates a profile and its active flag, logging before and after; inactive protocols are hidden and not ingested', async () => {
    // Change rows are ordered by time; the manual clock moves so each change has its own instant.
    clock.advance(1000);
    const res = await gql(server.url, UPDATE, {
      key: admin,
      variables: {
        slug: 'quayside-notes',
        input: { auditor: null, redemptionFrequency: 'weekly', active: false },
      },
    });
    expect(res.body.errors).toBeUndefined();
    expect(res.body.data!.updateProtocol).toMatchObject({
      active: false,
      auditor: null,
      redemptionFrequency: 'WEEKLY',
    });
    const listed = (await rest(server.url, '/v1/protocols?limit=100', { key: admin })).body as Json[];
    expect(listed.find((p) => p.slug === 'quayside-notes')).toBeUndefined();
    const refused = await gql(server.url, INGEST, {
      key: admin,
      variables: { data: 'slug,date,aum_usd\nquayside-notes,2026-06-15,250000000\n' },
    });
    expect(refused.body.errors?.[0]?.message).toBe("slug: line 2: no active protocol 'quayside-notes'");

    clock.advance(1000);
    await gql(server.url, UPDATE, {
      key: admin,
      variables: { slug: 'quayside-notes', input: { active: true } },
    });
    const back = await gql(server.url, INGEST, {
      key: admin,
      variables: { data: 'slug,date,aum_usd\nquayside-notes,2026-06-15,250000000\n' },
    });
    expect(back.body.errors).toBeUndefined();
    const score = (await rest(server.url, '/v1/scores?limit=100', { key: admin })).body.find(
      (s: Json) => s.slug === 'quayside-notes',
    );
    const audit = await rest(server.url, `/v1/audits/${score.audit_id}`, { key: admin });
    // The new terms apply from the next reported day.
    expect(audit.body.inputs).toMatchObject({
      redemption_frequency_days: 7,
      audited: false,
      data_date: '2026-06-15',
    });

    const changes = (
      await gql(server.url, '{ protocolChanges(slug: "quayside-notes") { action before after } }', {
        key: admin,
      })
    ).body.data!.protocolChanges as Json[];
    expect(changes.map((c) => c.action)).toEqual(['CREATE', 'UPDATE', 'UPDATE']);
    expect(changes[1]!.before).toMatchObject({
      auditor: 'Morrow Audit',
      redemptionFrequency: 'DAILY',
      active: true,
    });
    expect(changes[1]!.after).toMatchObject({ auditor: null, redemptionFrequency: 'WEEKLY', active: false });
  });

  it('answers 404 for an unknown slug, 409 for a slug taken, 400 for an empty change, writing nothing', async () => {
    const before = await counts();
    for (const [slug, input, code, message] of [
      ['no-such', { name: 'X' }, 'NOT_FOUND', "Protocol 'no-such' was not found"],
      [
        'quayside-notes',
        { slug: 'harbor-treasury' },
        'CONFLICT',
        "A protocol with slug 'harbor-treasury' already exists",
      ],
      ['quayside-notes', {}, 'BAD_USER_INPUT', 'input: names no field to change'],
      ['quayside-notes', { yieldPct: -1 }, 'BAD_USER_INPUT', 'yieldPct: must be between 0 and 100 (got -1)'],
    ] as const) {
      const res = await gql(server.url, UPDATE, { key: admin, variables: { slug, input } });
      expect(res.body.errors?.[0], message).toMatchObject({ message, extensions: { code } });
    }
    expect(await counts()).toEqual(before);
  });

  it('gives one of two admins creating the same slug at once a 409 naming slug, never a 500', async () => {
    const [before] = await counts();
    const input = { ...VALID, slug: 'twin-notes' };
    const results = await Promise.all(
      [1, 2].map(() => gql(server.url, CREATE, { key: admin, variables: { input } })),
    );
    const errors = results.map((r) => r.body.errors?.[0]).filter(Boolean);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatchObject({ extensions: { code: 'CONFLICT', field: 'slug' } });
    expect(errors[0]!.message).toMatch(/^A protocol with (that slug|slug 'twin-notes') already exists$/);
    expect(await em().count(Protocol, {})).toBe(before! + 1);
  });

  it('imports protocols from a file with the CLI, all rows or none, naming line and field', async () => {
    const cmd = liquidityCommands.find((c) => c.name === 'liquidity protocols')!;
    const ctx = {
      config: server.config,
      db: server.database.db,
      clock,
      versions: server.app.services.versions,
    };
    const dir = mkdtempSync(join(tmpdir(), 'tidegate-protocols-'));
    const header =
      'slug,name,category,token_symbol,issuer,jurisdiction,regulatory_status,custodian,qualified_custodian,governance_model,governance_maturity,chains,token_standard,redemption_frequency,notice_period_days,redemption_gates,minimum_investment_usd,yield_pct,launch_date,kyc_required,accredited_only,sanctions_screening,yield_attribution';
    const row = (slug: string, jurisdiction: string) =>
      `${slug},Pier ${slug},real_estate,PIER,Pier Ltd.,${jurisdiction},exempt,Keel Fiduciary,false,trustee,developing,"[""ethereum""]",ERC-3643,monthly,10,true,250000,7.5,2024-05-01,true,true,true,"[{""source"":""Rent"",""sharePct"":100}]"`;

    const csv = (...lines: string[]) => [header, ...lines].join('\n');
    const before = await counts();
    const rejected: Array<{ name: string; text: string; action?: string; message: string | RegExp }> = [
      {
        name: 'bad.csv',
        text: csv(row('pier-one', 'GB'), row('pier-two', 'Britain')),
        message: "jurisdiction: line 3: must be an ISO 3166-1 alpha-2 country code (got 'Britain')",
      },
      {
        name: 'unknown.csv',
        text: 'slug,colour\nharbor-treasury,red\n',
        message:
          /^colour: line 2: unknown field \(expected slug, name, category, active, description, token_symbol/,
      },
      {
        name: 'twice.csv',
        text: csv(row('pier-one', 'GB'), row('pier-one', 'IE')),
        message: "slug: line 3: a second record for 'pier-one'",
      },
      { name: 'empty.csv', text: `${header}\n`, message: 'file: contains no rows' },
      { name: 'empty.json', text: '[]', message: 'file: contains no rows' },
      {
        name: 'chain.csv',
        text: csv(row('pier-one', 'GB').replace('""ethereum""', '""Ether Eum""')),
        message: 'chains: line 2: item 1 must be a chain name such as ethereum or base (got "Ether Eum")',
      },
      {
        name: 'no-source.csv',
        text: csv(row('pier-one', 'GB').replace('""source"":""Rent"",', '')),
        message: 'yield_attribution: line 2: item 1: source must be 1–100 characters',
      },
      {
        name: 'share.csv',
        text: csv(row('pier-one', 'GB').replace('""sharePct"":100', '""sharePct"":""all""')),
        message: 'yield_attribution: line 2: item 1: sharePct must be a number between 0 and 100',
      },
      {
        name: 'action.csv',
        text: csv(row('pier-one', 'GB')),
        action: 'export',
        message: "ACTION: must be import (got 'export')",
      },
    ];
    for (const { name, text, action = 'import', message } of rejected) {
      const file = join(dir, name);
      writeFileSync(file, text);
      await expect(cmd.run(ctx, { options: {}, positionals: [action, file] }), name).rejects.toThrow(message);
    }
    expect(await counts()).toEqual(before);

    const good = join(dir, 'good.json');
    writeFileSync(
      good,
      JSON.stringify([
        { slug: 'harbor-treasury', yield_pct: 4.2 },
        {
          ...Object.fromEntries(
            Object.entries(VALID).map(([k, v]) => [k.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`), v]),
          ),
          slug: 'pier-three',
        },
      ]),
    );
    const out = await cmd.run(ctx, { options: { json: true }, positionals: ['import', good] });
    expect(out.json).toMatchObject({ created: 1, updated: 1 });
    const harbor = await rest(server.url, '/v1/protocols/harbor-treasury', { key: admin });
    expect(harbor.body.yield_pct).toBe(4.2);
    expect((await rest(server.url, '/v1/protocols/pier-three', { key: admin })).status).toBe(200);
    const log = await em().find(ProtocolChange, { actor: 'cli' });
    expect(log.map((c) => c.action).sort()).toEqual(['CREATE', 'UPDATE']);
  });
});
