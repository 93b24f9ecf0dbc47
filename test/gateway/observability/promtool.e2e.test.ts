import { spawnSync } from 'node:child_process';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeWithPromtool, PROMTOOL_PATH } from '../../helpers/env.js';
import { startTestServer, type TestServer } from '../../helpers/server.js';

describeWithPromtool('GET /metrics passes `promtool check metrics`', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(() => server?.close());

  it('with no lint problem, the renamed nodejs_active_*_all_types gauges included', async () => {
    // A request of every door first, so their families have samples.
    await fetch(`${server.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"query":"{ __typename }"}',
    });
    await fetch(`${server.url}/v1/protocols`, { headers: { 'x-api-key': server.key('ANALYST') } });
    const text = await (await fetch(`${server.url}/metrics`)).text();
    expect(text).toMatch(/^# TYPE nodejs_active_handles_all_types gauge$/m);
    expect(text).not.toMatch(/nodejs_active_\w+_total/);
    const checked = spawnSync(PROMTOOL_PATH, ['check', 'metrics'], { input: text, encoding: 'utf8' });
    expect(`${checked.stdout}${checked.stderr}`).toBe('');
    expect(checked.status).toBe(0);
  });
});
