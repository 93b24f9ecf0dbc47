import { createHash, randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TrustedDocuments } from '../../../src/gateway/pipeline/persisted.js';
import { keysOf, startGatewayProcess, type GatewayProcess } from '../../events/process.js';
import { createSeededTestDatabase, type TestDatabase } from '../../helpers/db.js';
import { describeWithRedis, TEST_REDIS_URL } from '../../helpers/env.js';
import { gql, rest, startTestServer, type TestServer } from '../../helpers/server.js';

const QUERY = 'query PersistedPorts { ports(first: 2) { nodes { locode } } }';
const HASH = createHash('sha256').update(QUERY).digest('hex');
const persisted = { persistedQuery: { version: 1, sha256Hash: HASH } };

async function post(url: string, key: string, body: Record<string, unknown>) {
  return rest(url, '/graphql', { method: 'POST', key, body });
}

describeWithRedis('automatic persisted queries shared through Redis', () => {
  const prefix = `tg-apq-${randomBytes(4).toString('hex')}`;
  let a: GatewayProcess;
  let b: GatewayProcess;
  let database: TestDatabase;
  let key: string;
  let redis: Redis;
  beforeAll(async () => {
    const seeded = await createSeededTestDatabase('sqlite');
    database = seeded.database;
    key = keysOf(seeded.demo).PROFESSIONAL!.key;
    const env = { DATABASE_URL: database.url, REDIS_URL: TEST_REDIS_URL!, REDIS_PREFIX: prefix };
    [a, b] = await Promise.all([startGatewayProcess(env), startGatewayProcess(env)]);
    redis = new Redis(TEST_REDIS_URL!);
  }, 120_000);
  afterAll(async () => {
    await a?.stop();
    await b?.stop();
    if (redis) {
      const keys = await redis.keys(`${prefix}:*`);
      if (keys.length > 0) await redis.del(...keys);
      redis.disconnect();
    }
    await database?.drop();
  });

  it('a query registered through one process runs by its hash alone on the other', async () => {
    const unknown = await post(b.url, key, { extensions: persisted });
    expect(unknown.body.errors[0].extensions.code).toBe('PERSISTED_QUERY_NOT_FOUND');

    const registered = await post(a.url, key, { query: QUERY, extensions: persisted });
    expect(registered.status, registered.text).toBe(200);
    expect(registered.body.data.ports.nodes).toHaveLength(2);
    expect(await redis.exists(`${prefix}:apq:${HASH}`)).toBe(1);

    const byHash = await post(b.url, key, { extensions: persisted });
    expect(byHash.status, byHash.text).toBe(200);
    expect(byHash.body.data).toEqual(registered.body.data);
  });

  it('refuses a query whose hash does not match it', async () => {
    const wrong = await post(a.url, key, {
      query: '{ __typename }',
      extensions: persisted,
    });
    expect(wrong.status).toBe(400);
    expect(wrong.body.data).toBeUndefined();
  });
});

describe('trusted documents (TRUSTED_DOCUMENTS=true)', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ env: { TRUSTED_DOCUMENTS: 'true' } });
  });
  afterAll(async () => server?.close());

  // A registered operation, spelled differently: other whitespace, fragment first, a comment.
  const registered = `
    fragment PortOpsVessel on Vessel { id imo name flag type grossTonnage deadweight yearBuilt }
    # the vessel lookup of the REST shim
    query RestVesselLookup($imo: String!) { vessel(imo: $imo) { ...PortOpsVessel } }`;

  it('runs an operation registered in schema/operations, however it is formatted', async () => {
    for (let i = 0; i < 4; i++) {
      const res = await gql(server.url, registered, {
        key: server.key('PROFESSIONAL'),
        variables: { imo: '9074729' },
      });
      expect(res.body.errors).toBeUndefined();
      expect(res.body.data!.vessel).toMatchObject({ imo: '9074729' });
    }
  });

  it('refuses any other operation with 403, also once it has been seen often (the compiled fast path)', async () => {
    const changed = registered.replace('yearBuilt', '');
    for (const query of ['{ ports(first: 1) { nodes { locode } } }', changed]) {
      for (let i = 0; i < 4; i++) {
        const res = await gql(server.url, query, {
          key: server.key('PROFESSIONAL'),
          variables: { imo: '9074729' },
        });
        expect(res.status).toBe(403);
        expect(res.body.errors![0]!.extensions).toMatchObject({
          code: 'FORBIDDEN',
          reason: 'UNTRUSTED_DOCUMENT',
        });
      }
    }
  });

  it('loads every named operation under schema/operations and judges malformed input as untrusted', () => {
    const trusted = TrustedDocuments.load();
    expect(trusted.size).toBeGreaterThan(50);
    expect(trusted.allows('query {', undefined)).toBe(false);
    expect(trusted.allows(registered, 'NoSuchOperation')).toBe(false);
    expect(trusted.allows(registered, 'RestVesselLookup')).toBe(true);
  });
});
