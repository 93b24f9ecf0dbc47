import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeEachDialect } from '../helpers/env.js';
import { createKey, gql, rest, startTestServer, type Json, type TestServer } from '../helpers/server.js';

/**
 * Every update path, REST and GraphQL, changes what the request names and nothing else: each
 * case reads the record, sends a change naming one field, reads it again and compares every
 * other field, so an update can never switch off settings the request did not name.
 */

/** Fields that move on every write by design. */
const STAMPS = new Set(['updatedAt', 'updated_at']);

function expectOnlyChanged(before: Json, after: Json, changed: string[], context: string): void {
  const unchanged = (record: Json) =>
    Object.fromEntries(Object.entries(record).filter(([k]) => !changed.includes(k) && !STAMPS.has(k)));
  expect(unchanged(after), context).toEqual(unchanged(before));
  for (const field of changed)
    expect(after[field], `${context}: ${field} changed`).not.toEqual(before[field]);
}

describeEachDialect('partial updates keep every field the request does not name', (dialect) => {
  let server: TestServer;
  let key: string;
  let admin: string;
  let portCallId: string;
  let vendorId: string;
  let slugs: string[];

  const get = async (path: string) => (await rest(server.url, path, { key })).body;
  const send = async (method: string, path: string, body: unknown) => {
    const res = await rest(server.url, path, { key, method, body });
    expect(res.status, `${method} ${path}: ${res.text}`).toBeLessThan(300);
    return res.body;
  };
  const mutate = async (query: string, variables: Record<string, unknown>, as = key) => {
    const res = await gql(server.url, query, { variables, key: as });
    expect(res.body.errors, JSON.stringify(res.body.errors)).toBeUndefined();
    return Object.values(res.body.data!)[0] as Json;
  };

  beforeAll(async () => {
    server = await startTestServer({ dialect });
    key = server.key('INSTITUTIONAL');
    admin = (await createKey(server, { plan: 'INSTITUTIONAL', scopes: 'admin' })).secret;
    const calls = (await get('/v1/port-calls?status=SCHEDULED&limit=1')).data;
    portCallId = calls[0].id;
    vendorId = (await get('/v1/vendors?limit=1')).data[0].id;
    slugs = (await get('/v1/protocols?limit=3')).map((p: Json) => p.slug);
  });
  afterAll(async () => server?.close());

  describe('REST', () => {
    it('PATCH /v1/port-calls/:id with agent only keeps the reference and the estimates', async () => {
      const before = await get(`/v1/port-calls/${portCallId}`);
      await send('PATCH', `/v1/port-calls/${portCallId}`, { agent: 'Partial Agency' });
      const after = await get(`/v1/port-calls/${portCallId}`);
      expectOnlyChanged(before, after, ['agent'], 'PATCH port call');
    });

    it('PATCH /v1/vendors/:id with contactPhone only keeps name, services, ports, email and active', async () => {
      const before = await get(`/v1/vendors/${vendorId}`);
      await send('PATCH', `/v1/vendors/${vendorId}`, { contactPhone: '+65 6000 0001' });
      const after = await get(`/v1/vendors/${vendorId}`);
      expectOnlyChanged(before, after, ['contactPhone'], 'PATCH vendor');
    });

    it('POST /v1/watchlist with add only keeps every alert setting, and a setting keeps the list', async () => {
      const configured = await send('POST', '/v1/watchlist', {
        add: [slugs[0]],
        score_change_threshold: 3,
        tier_shift: true,
        aum_change_pct: 12,
        compliance_events: true,
      });
      const added = await send('POST', '/v1/watchlist', { add: [slugs[1]] });
      expectOnlyChanged(configured, added, ['protocols'], 'watchlist add');
      expect(added.protocols.map((p: Json) => p.slug).sort()).toEqual([slugs[0], slugs[1]].sort());
      const toggled = await send('POST', '/v1/watchlist', { tier_shift: false });
      expectOnlyChanged(added, toggled, ['tier_shift'], 'watchlist setting');
      // 0 is how an alert is switched off.
      const off = await send('POST', '/v1/watchlist', { score_change_threshold: 0 });
      expect(off.score_change_threshold).toBeNull();
    });

    it('PUT /v1/scoring-profiles/:id with a name only keeps weights and penalty caps', async () => {
      const created = await send('POST', '/v1/scoring-profiles', {
        name: 'Partial',
        weights: { aum: 0.3, redemption: 0.3, volume: 0.2, issuer: 0.1, jurisdiction: 0.1 },
        penalty_caps: { concentration: 5 },
      });
      const after = await send('PUT', `/v1/scoring-profiles/${created.id}`, { name: 'Renamed' });
      expectOnlyChanged(created, after, ['name'], 'PUT scoring profile');
    });

    for (const [door, body] of [
      ['/v1/webhooks', { url: 'http://127.0.0.1:9/partial', event_types: ['score_change', 'tier_change'] }],
      ['/v1/webhook-subscriptions', { url: 'http://127.0.0.1:9/partial', eventTypes: ['port_call.created'] }],
    ] as const) {
      it(`PATCH ${door}/:id with a description only keeps url, event types and state`, async () => {
        const registered = await send('POST', door, { ...body, description: 'first' });
        const id = registered.endpoint?.id ?? registered.id;
        const before = await get(`${door}/${id}`);
        const after = await send('PATCH', `${door}/${id}`, { description: 'second' });
        expectOnlyChanged(before, after, ['description'], `PATCH ${door}`);
        const paused = await send('PATCH', `${door}/${id}`, { active: false });
        expect(paused.description).toBe('second');
        const cleared = await send('PATCH', `${door}/${id}`, { description: '' });
        expectOnlyChanged(paused, cleared, ['description'], `PATCH ${door} clearing`);
        expect(cleared.description).toBeNull();
      });
    }
  });

  describe('GraphQL', () => {
    it('updatePortCall with etd only keeps the rest', async () => {
      const fields = 'id voyageReference agent eta etb etd status';
      const before = (await gql(server.url, `{ portCall(id: "${portCallId}") { ${fields} } }`, { key })).body
        .data!.portCall as Json;
      const etd = new Date(new Date(before.etb ?? before.eta).getTime() + 86_400_000 * 3).toISOString();
      const after = await mutate(
        `mutation($id: ID!, $patch: PortCallPatch!) { updatePortCall(id: $id, patch: $patch) { ${fields} } }`,
        { id: portCallId, patch: { etd } },
      );
      expectOnlyChanged(before, after, ['etd'], 'updatePortCall');
    });

    it('updateVendor with active only keeps the rest', async () => {
      const fields = 'id name services contactEmail contactPhone active';
      const before = (await gql(server.url, `{ vendor(id: "${vendorId}") { ${fields} } }`, { key })).body
        .data!.vendor as Json;
      const after = await mutate(
        `mutation($id: ID!, $patch: VendorPatch!) { updateVendor(id: $id, patch: $patch) { ${fields} } }`,
        { id: vendorId, patch: { active: !before.active } },
      );
      expectOnlyChanged(before, after, ['active'], 'updateVendor');
    });

    it('updateWatchlist with add only keeps every alert setting', async () => {
      const fields = 'scoreChangeThreshold tierShift aumChangePct complianceEvents protocols { slug }';
      const before = await mutate(
        `mutation($input: WatchlistInputType!) { updateWatchlist(input: $input) { ${fields} } }`,
        { input: { scoreChangeThreshold: 4, tierShift: true, aumChangePct: 9, complianceEvents: true } },
      );
      const after = await mutate(
        `mutation($input: WatchlistInputType!) { updateWatchlist(input: $input) { ${fields} } }`,
        { input: { add: [slugs[2]] } },
      );
      expectOnlyChanged(before, after, ['protocols'], 'updateWatchlist');
      // Variables left unset inside the input object reach the service as null: null keeps too
      // (slugs[0] is already listed, so nothing at all changes).
      // Twice: the second sighting runs the compiled operation, where the unset variables turn into null.
      for (let sighting = 1; sighting <= 2; sighting++) {
        const nested = await mutate(
          `mutation($add: [String!], $score: Float, $aum: Float) { updateWatchlist(input: { add: $add, scoreChangeThreshold: $score, aumChangePct: $aum }) { ${fields} } }`,
          { add: [slugs[0]] },
        );
        expectOnlyChanged(after, nested, [], `updateWatchlist with unset variables, sighting ${sighting}`);
      }
    });

    it('updateScoringProfile with penalty caps only keeps name and weights', async () => {
      const fields =
        'id name weights { aum redemption volume issuer jurisdiction } penaltyCaps { concentration deviation queue }';
      const created = await mutate(
        `mutation($input: ScoringProfileInput!) { createScoringProfile(input: $input) { ${fields} } }`,
        {
          input: {
            name: 'Partial GraphQL',
            weights: { aum: 0.2, redemption: 0.2, volume: 0.2, issuer: 0.2, jurisdiction: 0.2 },
          },
        },
      );
      const after = await mutate(
        `mutation($id: ID!, $input: ScoringProfileInput!) { updateScoringProfile(id: $id, input: $input) { ${fields} } }`,
        { id: created.id, input: { penaltyCaps: { concentration: 3 } } },
      );
      expectOnlyChanged(created, after, ['penaltyCaps'], 'updateScoringProfile');
    });

    it('updateWebhook and updateWebhookSubscription with active only keep url, event types and description', async () => {
      for (const [register, update, eventTypes] of [
        ['registerWebhook', 'updateWebhook', ['aum_change']],
        ['createWebhookSubscription', 'updateWebhookSubscription', ['invoice.issued']],
      ] as const) {
        const fields = 'id url eventTypes description status';
        const registered = await mutate(
          `mutation($input: WebhookEndpointInput!) { ${register}(input: $input) { endpoint { ${fields} } } }`,
          { input: { url: 'http://127.0.0.1:9/partial-gql', eventTypes, description: 'kept' } },
        );
        const after = await mutate(
          `mutation($id: ID!, $patch: WebhookEndpointPatch!) { ${update}(id: $id, patch: $patch) { ${fields} } }`,
          { id: registered.endpoint.id, patch: { active: false } },
        );
        expectOnlyChanged(registered.endpoint, after, ['status'], update);
      }
    });

    it('updateProtocol with a description only keeps the profile', async () => {
      const fields = 'slug name category description issuer custodian auditor website chains yieldPct';
      const before = (await gql(server.url, `{ protocol(slug: "${slugs[0]}") { ${fields} } }`, { key })).body
        .data!.protocol as Json;
      const after = await mutate(
        `mutation($slug: String!, $input: ProtocolInput!) { updateProtocol(slug: $slug, input: $input) { ${fields} } }`,
        { slug: slugs[0], input: { description: 'Changed by a partial update.' } },
        admin,
      );
      expectOnlyChanged(before, after, ['description'], 'updateProtocol');
    });
  });
});
