import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { demoKeys, startGatewayProcess, type GatewayProcess } from '../../events/process.js';
import { eventually } from '../../events/helpers.js';
import { gql, rest } from '../../helpers/server.js';

describe('logs of a real process', () => {
  const dir = mkdtempSync(join(tmpdir(), 'tidegate-logs-'));
  let gateway: GatewayProcess;
  beforeAll(async () => {
    gateway = await startGatewayProcess({ DATABASE_URL: join(dir, 'db.sqlite'), DEMO_SEED: 'true' });
  }, 120_000);
  afterAll(async () => {
    await gateway?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  const lines = () =>
    gateway
      .stdout()
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as Record<string, unknown>);

  it('prints the demo credentials on stderr: stdout is JSON lines only', () => {
    expect(gateway.output()).toContain('tidegate demo credentials');
    expect(gateway.stdout()).not.toContain('demo credentials');
    expect(lines().length).toBeGreaterThan(0); // every line parsed as JSON
  });

  it('logs one line per request with its route or operation, account, credential and status', async () => {
    const keys = demoKeys(gateway.output());
    const key = keys.PROFESSIONAL!;
    expect((await rest(gateway.url, '/v1/vessels/lookup?imo=9074729', { key: key.key })).status).toBe(200);
    expect((await gql(gateway.url, 'query Who { viewer { accountId } }', { key: key.key })).status).toBe(200);
    expect((await rest(gateway.url, '/v1/ports', { key: 'tg_wrong' })).status).toBe(401);
    await eventually(
      () => lines().filter((l) => l.msg === 'request completed').length >= 3,
      'three request lines',
    );
    const requests = lines().filter((l) => l.msg === 'request completed');
    const byRoute = (route: string) => requests.find((l) => l.route === route);
    expect(byRoute('GET /v1/vessels/lookup')).toMatchObject({
      status: 200,
      accountId: key.accountId,
      credentialKind: 'api_key',
      credentialId: expect.any(String),
      reqId: expect.any(String),
      method: 'GET',
      durationMs: expect.any(Number),
    });
    expect(byRoute('query Who')).toMatchObject({ status: 200, accountId: key.accountId });
    // Refused at the edge: the line has the status and no account.
    expect(byRoute('GET /v1/ports')).toMatchObject({ status: 401 });
    expect(byRoute('GET /v1/ports')!.accountId).toBeUndefined();
    // Fastify's own two lines per request are off: one line each.
    expect(lines().filter((l) => l.msg === 'incoming request')).toEqual([]);
  });
});
