import type { ReadModelVersions } from '../db/versions.js';
import { conflictOnUnique } from '../db/errors.js';
import type { EntityManager } from '@mikro-orm/knex';
import { isDate, todayOf, type Clock } from '../kernel/clock.js';
import { dayInRange } from '../kernel/dates.js';
import { badInput, conflict, notFound } from '../kernel/errors.js';
import { textProblem } from '../kernel/text.js';
import {
  GovernanceMaturity,
  Protocol,
  ProtocolCategory,
  ProtocolChange,
  RedemptionFrequency,
  RegulatoryStatus,
  type RegulatoryFiling,
  type YieldSource,
} from './entities.js';
import { SLUG, snakeCase } from './fields.js';
import { FieldReader, readRecords, type FileFormat } from './records.js';
import type { ServiceDeps } from '../kernel/deps.js';

/**
 * Protocol onboarding: create and update profiles (admin), one validator for the GraphQL
 * mutations and the `tidegate liquidity protocols import` file, every change logged with before
 * and after. Profile terms the engine uses (redemption terms, auditor, custodian, regulatory
 * status) apply from the next reported day: stored days keep the inputs they were scored with.
 */

/**
 * The profile fields a caller may set, in GraphQL spelling (files use the snake_case of each), each
 * with whether a new protocol needs it (the rest have defaults or may be null).
 */
const PROFILE = {
  slug: true,
  name: true,
  category: true,
  active: false,
  description: false,
  tokenSymbol: true,
  issuer: true,
  jurisdiction: true,
  regulatoryStatus: true,
  custodian: true,
  qualifiedCustodian: true,
  auditor: false,
  governanceModel: true,
  governanceMaturity: true,
  chains: true,
  tokenStandard: true,
  redemptionFrequency: true,
  noticePeriodDays: true,
  redemptionGates: true,
  minimumInvestmentUsd: true,
  yieldPct: true,
  yieldAttribution: false,
  launchDate: true,
  kycRequired: true,
  accreditedOnly: true,
  sanctionsScreening: true,
  transferRestrictions: false,
  regulatoryFilings: false,
  website: false,
} as const;

type ProfileField = keyof typeof PROFILE;
type Settable = Exclude<ProfileField, 'minimumInvestmentUsd'> | 'minimumInvestment';
type ProtocolDraft = Partial<Pick<Protocol, Settable>>;

export const PROFILE_FIELDS = Object.keys(PROFILE) as ReadonlyArray<ProfileField>;
const REQUIRED_ON_CREATE = PROFILE_FIELDS.filter((field) => PROFILE[field]);

/**
 * Reads and validates the fields present in one record. `creating` requires the fields a new
 * protocol needs; an update takes any subset (an explicit null clears `auditor` or `website`).
 */
function readProtocol(f: FieldReader, creating: boolean, today: string): ProtocolDraft {
  f.only(PROFILE_FIELDS);
  if (creating) for (const field of REQUIRED_ON_CREATE) if (!f.has(field)) f.fail(field, 'is required');
  const d: ProtocolDraft = {};
  const put = <K extends keyof ProtocolDraft>(key: K, value: ProtocolDraft[K] | null) => {
    if (value !== null && value !== undefined) d[key] = value;
  };
  const pattern = (field: ProfileField, re: RegExp, rule: string, transform = (v: string) => v) => {
    const raw = f.text(field);
    if (raw === null) return null;
    const value = transform(raw);
    if (!re.test(value)) f.fail(field, `${rule} (got '${raw}')`);
    return value;
  };

  const slug = f.text('slug', { max: 80 });
  if (slug !== null && (slug.length < 2 || !SLUG.test(slug)))
    f.fail(
      'slug',
      `must be 2–80 lower-case letters, digits and single hyphens, e.g. harbor-treasury (got '${slug}')`,
    );
  put('slug', slug);
  put('name', f.text('name', { max: 200 }));
  put('category', f.choice('category', Object.values(ProtocolCategory)));
  put('active', f.boolean('active'));
  put('description', f.text('description', { max: 1000, multiline: true }));
  put(
    'tokenSymbol',
    pattern('tokenSymbol', /^[A-Z0-9.]{1,16}$/, 'must be 1–16 letters, digits or dots', (v) =>
      v.toUpperCase(),
    ),
  );
  put('issuer', f.text('issuer', { max: 200 }));
  put(
    'jurisdiction',
    pattern('jurisdiction', /^[A-Z]{2}$/, 'must be an ISO 3166-1 alpha-2 country code', (v) =>
      v.toUpperCase(),
    ),
  );
  put('regulatoryStatus', f.choice('regulatoryStatus', Object.values(RegulatoryStatus)));
  put('custodian', f.text('custodian', { max: 200 }));
  put('qualifiedCustodian', f.boolean('qualifiedCustodian'));
  if (f.cleared('auditor')) d.auditor = null;
  else put('auditor', f.text('auditor', { max: 200 }));
  put(
    'governanceModel',
    pattern(
      'governanceModel',
      /^[A-Z][A-Z0-9_]{1,39}$/,
      'must be an upper-case name such as CORPORATE_BOARD, TRUSTEE, DAO or MULTISIG',
      (v) => v.toUpperCase().replace(/[-\s]/g, '_'),
    ),
  );
  put('governanceMaturity', f.choice('governanceMaturity', Object.values(GovernanceMaturity)));
  put('chains', chainsOf(f));
  put(
    'tokenStandard',
    pattern(
      'tokenStandard',
      /^[A-Z0-9][A-Z0-9-]{1,19}$/,
      'must be a token standard such as ERC-20, ERC-3643 or SPL',
      (v) => v.toUpperCase(),
    ),
  );
  put('redemptionFrequency', f.choice('redemptionFrequency', Object.values(RedemptionFrequency)));
  put('noticePeriodDays', f.number('noticePeriodDays', { min: 0, max: 365, integer: true }));
  put('redemptionGates', f.boolean('redemptionGates'));
  put('minimumInvestment', minimumInvestmentOf(f));
  put('yieldPct', f.number('yieldPct', { min: 0, max: 100 }));
  put('yieldAttribution', yieldAttributionOf(f));
  put('launchDate', f.date('launchDate', { notAfter: { date: today, why: `today (${today})` } }));
  put('kycRequired', f.boolean('kycRequired'));
  put('accreditedOnly', f.boolean('accreditedOnly'));
  put('sanctionsScreening', f.boolean('sanctionsScreening'));
  put('transferRestrictions', f.text('transferRestrictions', { max: 300 }));
  put('regulatoryFilings', filingsOf(f, today));
  if (f.cleared('website')) d.website = null;
  else put('website', websiteOf(f));
  return d;
}

function listOf(f: FieldReader, field: ProfileField): unknown[] | null {
  const value = f.structured(field);
  if (value === undefined) return null;
  if (!Array.isArray(value)) f.fail(field, 'must be a list (in CSV, JSON text such as ["ethereum","base"])');
  return value;
}

function chainsOf(f: FieldReader): string[] | null {
  const list = listOf(f, 'chains');
  if (list === null) return null;
  if (list.length < 1 || list.length > 20) f.fail('chains', `must name 1–20 chains (got ${list.length})`);
  const chains = list.map((c, i) => {
    if (typeof c !== 'string' || !/^[a-z0-9][a-z0-9-]{1,29}$/.test(c.trim().toLowerCase()))
      f.fail(
        `chains`,
        `item ${i + 1} must be a chain name such as ethereum or base (got ${JSON.stringify(c)})`,
      );
    return c.trim().toLowerCase();
  });
  if (new Set(chains).size !== chains.length) f.fail('chains', 'must not name a chain twice');
  return [...chains].sort();
}

/** Whole US dollars, as a decimal string or number: the entity stores dollars, not cents. */
function minimumInvestmentOf(f: FieldReader): number | null {
  const value = f.number('minimumInvestmentUsd', { min: 0, max: 1e12 });
  if (value === null) return null;
  if (!Number.isInteger(value)) f.fail('minimumInvestmentUsd', `must be whole US dollars (got ${value})`);
  return value;
}

function yieldAttributionOf(f: FieldReader): YieldSource[] | null {
  const list = listOf(f, 'yieldAttribution');
  if (list === null) return null;
  const sources = list.map((item, i) => {
    const o = item as Record<string, unknown>;
    const source = typeof o?.source === 'string' ? o.source.trim() : '';
    const share = o?.sharePct ?? o?.share_pct;
    if (!source || source.length > 100)
      f.fail('yieldAttribution', `item ${i + 1}: source must be 1–100 characters`);
    const problem = textProblem(source);
    if (problem) f.fail('yieldAttribution', `item ${i + 1}: source ${problem.message}`);
    if (typeof share !== 'number' || !Number.isFinite(share) || share < 0 || share > 100)
      f.fail('yieldAttribution', `item ${i + 1}: sharePct must be a number between 0 and 100`);
    return { source, sharePct: share };
  });
  const total = sources.reduce((s, x) => s + x.sharePct, 0);
  if (sources.length > 0 && Math.abs(total - 100) > 0.01)
    f.fail('yieldAttribution', `shares must add up to 100 (got ${Math.round(total * 100) / 100})`);
  return sources;
}

function filingsOf(f: FieldReader, today: string): RegulatoryFiling[] | null {
  const list = listOf(f, 'regulatoryFilings');
  if (list === null) return null;
  return list.map((item, i) => {
    const o = (item ?? {}) as Record<string, unknown>;
    const text = (key: string, max: number) => {
      const v = typeof o[key] === 'string' ? (o[key] as string).trim() : '';
      if (!v || v.length > max)
        f.fail('regulatoryFilings', `item ${i + 1}: ${key} must be 1–${max} characters`);
      const problem = textProblem(v);
      if (problem) f.fail('regulatoryFilings', `item ${i + 1}: ${key} ${problem.message}`);
      return v;
    };
    const filedOn = o.filedOn ?? o.filed_on;
    if (typeof filedOn !== 'string' || !isDate(filedOn) || !dayInRange(filedOn))
      f.fail('regulatoryFilings', `item ${i + 1}: filedOn must be a date YYYY-MM-DD from 1900 to 2199`);
    if (filedOn > today)
      f.fail('regulatoryFilings', `item ${i + 1}: filedOn must not be after today (${today})`);
    return { regulator: text('regulator', 40), reference: text('reference', 100), filedOn };
  });
}

function websiteOf(f: FieldReader): string | null {
  const raw = f.text('website', { max: 300 });
  if (raw === null) return null;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    f.fail('website', `must be an absolute http(s) URL (got '${raw}')`);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:')
    f.fail('website', `must be an http or https URL (got '${raw}')`);
  return url.toString();
}

/** The profile as logged in the change history (every settable field). */
function stateOf(p: Protocol): Record<string, unknown> {
  const state: Record<string, unknown> = {};
  for (const field of PROFILE_FIELDS)
    state[field] = field === 'minimumInvestmentUsd' ? p.minimumInvestmentUsd : structuredClone(p[field]);
  return state;
}

async function ensureUniqueSlug(em: EntityManager, slug: string, exceptId?: string): Promise<void> {
  const clash = await em.findOne(Protocol, { slug });
  if (clash && clash.id !== exceptId)
    throw conflict(`A protocol with slug '${slug}' already exists`, { field: 'slug' });
}

function logChange(
  em: EntityManager,
  clock: Clock,
  actor: string,
  p: Protocol,
  action: ProtocolChange['action'],
  before: Record<string, unknown> | null,
): void {
  em.persist(
    em.create(ProtocolChange, {
      protocolId: p.id,
      actor,
      action,
      before,
      after: stateOf(p),
      at: clock.now(),
    }),
  );
}

/** Creates a protocol from a validated draft (inside the caller's transaction). */
async function insertProtocol(
  em: EntityManager,
  clock: Clock,
  actor: string,
  draft: ProtocolDraft,
): Promise<Protocol> {
  await ensureUniqueSlug(em, draft.slug!);
  const now = clock.now();
  const protocol = em.create(Protocol, {
    description: '',
    transferRestrictions: '',
    yieldAttribution: [],
    regulatoryFilings: [],
    auditor: null,
    website: null,
    active: true,
    aum: 0,
    staleNotified: false,
    ...draft,
    createdAt: now,
    updatedAt: now,
  } as Protocol);
  em.persist(protocol);
  logChange(em, clock, actor, protocol, 'CREATE', null);
  return protocol;
}

async function applyUpdate(
  em: EntityManager,
  clock: Clock,
  actor: string,
  protocol: Protocol,
  draft: ProtocolDraft,
): Promise<Protocol> {
  if (draft.slug && draft.slug !== protocol.slug) await ensureUniqueSlug(em, draft.slug, protocol.id);
  const before = stateOf(protocol);
  Object.assign(protocol, draft);
  protocol.updatedAt = clock.now();
  logChange(em, clock, actor, protocol, 'UPDATE', before);
  return protocol;
}

/** Two admins claiming one slug at once: the database's unique index decides, and the loser gets a 409. */
function slugConflictAs409<T>(work: () => Promise<T>): Promise<T> {
  return conflictOnUnique(work, () =>
    conflict('A protocol with that slug already exists', { field: 'slug' }),
  );
}

/** A writer of the liquidity data: its commits are announced to this process's read models. */
export type WriterDeps = Pick<ServiceDeps, 'em' | 'clock'> & { versions: ReadModelVersions };

export async function createProtocol(
  { em, clock, versions }: WriterDeps,
  actor: string,
  input: Record<string, unknown>,
): Promise<Protocol> {
  const draft = readProtocol(new FieldReader(null, input), true, todayOf(clock));
  return slugConflictAs409(() =>
    versions.changing(em, 'liquidity', (tx) => insertProtocol(tx, clock, actor, draft)),
  );
}

export async function updateProtocol(
  { em, clock, versions }: WriterDeps,
  actor: string,
  slug: string,
  input: Record<string, unknown>,
): Promise<Protocol> {
  const draft = readProtocol(new FieldReader(null, input), false, todayOf(clock));
  if (Object.keys(draft).length === 0) throw badInput('input', 'names no field to change');
  return slugConflictAs409(() =>
    versions.changing(em, 'liquidity', async (tx) => {
      const protocol = await tx.findOne(Protocol, { slug: slug.trim().toLowerCase() });
      if (!protocol) throw notFound('Protocol', slug);
      return applyUpdate(tx, clock, actor, protocol, draft);
    }),
  );
}

export async function protocolChanges(em: EntityManager, slug: string): Promise<ProtocolChange[]> {
  const protocol = await em.findOne(Protocol, { slug: slug.trim().toLowerCase() });
  if (!protocol) throw notFound('Protocol', slug);
  return em.find(ProtocolChange, { protocolId: protocol.id }, { orderBy: { at: 'asc', id: 'asc' } });
}

const SNAKE_FIELDS = new Map<string, string>(PROFILE_FIELDS.map((f) => [snakeCase(f), f]));

/**
 * `tidegate liquidity protocols import FILE`: every record creates the protocol its slug names,
 * or updates it when the slug exists (only the columns given). All records are validated first
 * and applied in one transaction, so a bad file changes nothing.
 */
export async function importProtocols(
  { em, clock, versions }: WriterDeps,
  text: string,
  format: FileFormat,
): Promise<{ created: number; updated: number }> {
  const records = readRecords(text, format);
  if (records.length === 0) throw badInput('file', 'contains no rows');
  const existing = new Set((await em.find(Protocol, {}, { fields: ['slug'] })).map((p) => p.slug));
  const seen = new Set<string>();
  const drafts: Array<{ creating: boolean; draft: ProtocolDraft }> = [];
  for (const { at, record } of records) {
    const renamed: Record<string, unknown> = {};
    for (const [key, value] of Object.entries(record)) renamed[SNAKE_FIELDS.get(key) ?? key] = value;
    const f = new FieldReader(at, renamed, snakeCase);
    const slug = f.text('slug', { required: true })!.toLowerCase();
    if (seen.has(slug)) f.fail('slug', `a second record for '${slug}'`);
    seen.add(slug);
    const creating = !existing.has(slug);
    drafts.push({ creating, draft: readProtocol(f, creating, todayOf(clock)) });
  }
  return versions.changing(em, 'liquidity', async (tx) => {
    const bySlug = new Map((await tx.find(Protocol, { slug: { $in: [...seen] } })).map((p) => [p.slug, p]));
    let created = 0;
    let updated = 0;
    for (const { draft, creating } of drafts) {
      if (creating) {
        await insertProtocol(tx, clock, 'cli', draft);
        created++;
      } else {
        await applyUpdate(tx, clock, 'cli', bySlug.get(draft.slug!)!, draft);
        updated++;
      }
    }
    return { created, updated };
  });
}
