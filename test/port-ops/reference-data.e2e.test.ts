import { afterAll, beforeAll, expect, it } from 'vitest';
import { Port, Vessel } from '../../src/port-ops/entities.js';
import { portOpsCommands } from '../../src/port-ops/cli.js';
import { describeEachDialect } from '../helpers/env.js';
import { createKey, gql, startTestServer, type TestServer } from '../helpers/server.js';

const command = (name: string) => portOpsCommands.find((c) => c.name === name)!;

describeEachDialect('shared reference data: vessels and ports', (dialect) => {
  let server: TestServer;
  let admin: string;
  beforeAll(async () => {
    server = await startTestServer({ dialect });
    admin = (await createKey(server, { scopes: 'admin' })).secret;
  });
  afterAll(() => server?.close());

  const counts = async () => {
    const em = server.database.db.em();
    return `${await em.count(Vessel, {})},${await em.count(Port, {})}`;
  };

  it('admin creates a vessel and a port over GraphQL; others get 403 and nothing is written', async () => {
    const create = `mutation { createPort(input: { locode: "GBFXT", name: "Felixstowe", timeZone: "Europe/London" }) { locode country timeZone } }`;
    const before = await counts();
    const denied = await gql(server.url, create, { key: server.key('INSTITUTIONAL') });
    expect(denied.body.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
    expect(await counts()).toBe(before);
    const ok = await gql(server.url, create, { key: admin });
    expect(ok.body.data?.createPort).toEqual({ locode: 'GBFXT', country: 'GB', timeZone: 'Europe/London' });
    const again = await gql(server.url, create, { key: admin });
    expect(again.body.errors?.[0]?.extensions?.code).toBe('CONFLICT');
    expect(again.body.errors?.[0]?.message).toBe('A port with UN/LOCODE GBFXT already exists');
  });

  it('two admins adding the same vessel at once: one is created, the other is 409 naming the IMO (not a 500)', async () => {
    const create = `mutation { createVessel(input: { imo: "9500039", name: "Twin Tide", flag: "NO", type: TANKER, grossTonnage: 1, deadweight: 1, yearBuilt: 2015 }) { imo } }`;
    const results = await Promise.all([1, 2, 3].map(() => gql(server.url, create, { key: admin })));
    expect(results.filter((r) => r.body.data?.createVessel)).toHaveLength(1);
    const refused = results.filter((r) => r.body.errors);
    expect(refused.map((r) => r.body.errors?.[0]?.message)).toEqual([
      'A vessel with IMO 9500039 already exists',
      'A vessel with IMO 9500039 already exists',
    ]);
    expect(refused.every((r) => r.body.errors?.[0]?.extensions?.field === 'imo')).toBe(true);
  });

  it('a vessel looked up before it existed is found as soon as it is created (lookup cache is invalidated)', async () => {
    const lookup = `{ vessel(imo: "9876543") { imo name } }`;
    const key = server.key('INSTITUTIONAL');
    expect((await gql(server.url, lookup, { key })).body.data).toEqual({ vessel: null });
    const created = await gql(
      server.url,
      'mutation { createVessel(input: { imo: "9876543", name: "Cached Tide", flag: "SG", type: TANKER, grossTonnage: 1, deadweight: 1, yearBuilt: 2010 }) { imo } }',
      { key: admin },
    );
    expect(created.body.data).toEqual({ createVessel: { imo: '9876543' } });
    expect((await gql(server.url, lookup, { key })).body.data).toEqual({
      vessel: { imo: '9876543', name: 'Cached Tide' },
    });
  });

  it('rejects bad reference data with the field and rule, writing nothing', async () => {
    const before = await counts();
    const badImo = await gql(
      server.url,
      'mutation { createVessel(input: { imo: "9074728", name: "X", flag: "SG", type: TANKER, grossTonnage: 1, deadweight: 1, yearBuilt: 2010 }) { id } }',
      { key: admin },
    );
    expect(badImo.body.errors?.[0]?.message).toMatch(/^imo: IMO 9074728 fails the check digit/);
    const badFlag = await gql(
      server.url,
      'mutation { createVessel(input: { imo: "9321483", name: "X", flag: "XX", type: TANKER, grossTonnage: 1, deadweight: 1, yearBuilt: 2010 }) { id } }',
      { key: admin },
    );
    expect(badFlag.body.errors?.[0]?.message).toMatch(/^flag: must be an ISO 3166-1/);
    const badZone = await gql(
      server.url,
      'mutation { createPort(input: { locode: "GBSOU", name: "Southampton", timeZone: "Mars/Olympus" }) { id } }',
      { key: admin },
    );
    expect(badZone.body.errors?.[0]?.message).toMatch(/^timeZone: must be an IANA time zone/);
    expect(await counts()).toBe(before);
  });

  it('only officially assigned ISO 3166-1 codes are flags or LOCODE countries; IMO 0000000 is no ship', async () => {
    const before = await counts();
    const vessel = (imo: string, flag: string) =>
      gql(
        server.url,
        `mutation { createVessel(input: { imo: "${imo}", name: "X", flag: "${flag}", type: TANKER, grossTonnage: 1, deadweight: 1, yearBuilt: 2010 }) { id } }`,
        { key: admin },
      );
    // ICU has display names for these, but none is an assigned country code.
    for (const flag of ['ZZ', 'EU', 'UN', 'QO', 'XK']) {
      const res = await vessel('9321483', flag);
      expect(res.body.errors?.[0]?.message).toBe(
        `flag: must be an ISO 3166-1 alpha-2 country code, officially assigned (got '${flag}')`,
      );
    }
    const zeros = await vessel('0000000', 'SG');
    expect(zeros.body.errors?.[0]?.message).toBe('imo: IMO 0000000 is not an IMO number');
    const port = await gql(
      server.url,
      'mutation { createPort(input: { locode: "EUBRU", name: "X", timeZone: "Europe/Brussels" }) { id } }',
      { key: admin },
    );
    expect(port.body.errors?.[0]?.message).toMatch(/^locode: must be an ISO 3166-1 alpha-2 country code/);
    expect(await counts()).toBe(before);
  });

  it('the CLI adds vessels and ports through the same rules', async () => {
    const ctx = { config: server.config, db: server.database.db, clock: server.app.services.clock };
    const vessel = await command('vessels add').run(ctx, {
      options: {
        imo: '9500027',
        name: 'Quiet Harbour',
        flag: 'NO',
        type: 'GENERAL_CARGO',
        gt: '9000',
        dwt: '12000',
        built: '2018',
      },
      positionals: [],
    });
    expect(vessel.json).toMatchObject({ imo: '9500027', flag: 'NO' });
    await expect(
      command('vessels add').run(ctx, {
        options: { imo: '9500028', name: 'X', flag: 'NO', type: 'TANKER', gt: '1', dwt: '1', built: '2018' },
        positionals: [],
      }),
    ).rejects.toThrow(/check digit/);
    const port = await command('ports add').run(ctx, {
      options: { locode: 'nlams', name: 'Amsterdam', 'time-zone': 'Europe/Amsterdam' },
      positionals: [],
    });
    expect(port.json).toMatchObject({ locode: 'NLAMS', country: 'NL' });
  });
});
