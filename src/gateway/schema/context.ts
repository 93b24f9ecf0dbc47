import type { EntityManager } from '@mikro-orm/knex';
import DataLoader from 'dataloader';
import type { FastifyBaseLogger } from 'fastify';
import type { ValidationRule } from 'graphql';
import type { Config } from '../../config.js';
import type { Database } from '../../db/orm.js';
import type { ReadModelVersions } from '../../db/versions.js';
import type { Clock } from '../../kernel/clock.js';
import { Deadline } from '../../kernel/deadline.js';
import type { MaybePromise } from '../../kernel/maybe-async.js';
import type { SecretBox } from '../../kernel/secret-box.js';
import { unauthenticated } from '../../kernel/errors.js';
import type { Principal } from '../../kernel/principal.js';
import type { EventBus, EventPublisher } from '../../kernel/events.js';
import type { ServiceDeps } from '../../kernel/deps.js';
import type { AccessPolicy, Requirements } from '../pipeline/access.js';
import type { ReadNotes } from '../pipeline/answers.js';
import type { CredentialResolver } from '../doors/credentials.js';
import type { Metrics } from '../observability/metrics.js';
import type { PersistedOperations } from '../pipeline/persisted.js';
import type { Telemetry } from '../observability/telemetry.js';

/**
 * Process-wide services every door shares. Domains that need more (event bus, rate limiter,
 * document store …) add optional members here rather than reaching for globals.
 */
export interface AppServices {
  config: Config;
  db: Database;
  /** The versions of the data behind read models and kept answers (src/db/versions.ts). */
  versions: ReadModelVersions;
  clock: Clock;
  logger: FastifyBaseLogger;
  /** Called once per operation after the access check passes: rate limits and quotas. */
  admission: Admission;
  /** Where domains publish committed events (this process's bus, counted and traced). */
  events: EventPublisher;
  /** The live bus itself: graphql-ws and the live subscriptions listen to it. */
  bus: EventBus;
  credentials: CredentialResolver;
  audit: AuditLog;
  /** The access rules of the one schema; hand-written routes check through `authorizeField`. */
  policy: AccessPolicy;
  /** Validation rules beyond graphql-js's own (demand control), applied by every door. */
  validationRules: ValidationRule[];
  /** Encryption at rest for secrets the service must read back, and the root of derived keys. */
  secrets: SecretBox;
  metrics: Metrics;
  telemetry: Telemetry;
  persisted: PersistedOperations;
}

/** One audited call: who, what, how it ended. */
export interface AuditEntry {
  at: Date;
  requestId: string;
  accountId?: string | null;
  credentialKind?: string | null;
  credentialId?: string | null;
  ip?: string | null;
  userAgent?: string | null;
  operation: string;
  status: number;
  durationMs: number;
  /** The door the call came in by: graphql-http, graphql-ws, rest, console. */
  door?: string | null;
  /** The code of the call's first error, if any. */
  errorCode?: string | null;
}

/** Where every door records its calls (the audit domain's writer; src/audit/writer.ts). */
export interface AuditLog {
  record(entry: AuditEntry): void;
  /** Resolves when everything recorded so far is stored. */
  flush(): Promise<void>;
}

export interface AdmissionResult {
  /** Headers to send with the response (X-RateLimit-*). */
  headers: Record<string, string>;
}

export interface Admission {
  /**
   * Throws RATE_LIMIT_EXCEEDED / LIMIT_REACHED (with Retry-After) when the caller is over budget
   * (a rejected promise when the counters are remote). Synchronous when the counters are local.
   */
  admit(principal: Principal, requirements: Requirements): MaybePromise<AdmissionResult>;
  /** The budget headers without spending, for answers that refuse the call before admission. */
  peek(principal: Principal, requirements: Requirements): Promise<Record<string, string>>;
}

export const openAdmission: Admission = { admit: async () => ({ headers: {} }), peek: async () => ({}) };

/** Everything a resolver sees. Built once per request / operation. */
export interface GatewayContext {
  readonly requestId: string;
  readonly principal: Principal | null;
  readonly em: EntityManager;
  /**
   * The ORM's root entity manager, for prepared reads only (src/db/prepared.ts), which load no
   * entities and so need no identity map: a request whose reads are all prepared forks no entity
   * manager (a fork cost more CPU than the 10-row page it served). Such a read joins the
   * transaction of the async context it runs in, if any.
   */
  readonly reads: EntityManager;
  readonly services: AppServices;
  readonly loaders: LoaderRegistry;
  /** The operation's time budget (GRAPHQL_DEADLINE_MS), checked by long computations. */
  readonly deadline: Deadline;
  /** Filled in during execution and read by the transport: audit name, extra response headers. */
  meta: OperationMeta;
  /**
   * Where the resolvers of an operation whose answer may be kept note what they read, when its
   * answer source can tell whether a change touched that (AnswerSource.recorded): a list's port
   * calls. Absent otherwise, and then nothing is noted. Its `only`, when set, names the items a
   * list answers (a re-execution of the items a change touched).
   */
  recorded?: ReadNotes;
}

export interface OperationMeta {
  /** The operation as audit and metrics name it, e.g. `query Dashboard`. */
  operation?: string;
  /** Response headers the operation implies (X-RateLimit-*, Retry-After). */
  headers: Record<string, string>;
  /** `extensions.code` of each error in the answer, for metrics. */
  errorCodes?: string[];
}

/**
 * DataLoaders are per request: created on first use and shared by every resolver of the request;
 * so are values a request works out once (`once`), such as the data version its loads read.
 */
export class LoaderRegistry {
  private readonly loaders = new Map<string, DataLoader<unknown, unknown>>();
  private values: Map<string, unknown> | undefined;

  constructor(private readonly ctx: { em: EntityManager; reads: EntityManager }) {}

  /**
   * The request's loader under `name`. `batch` gets the request's entity manager, or with
   * `prepared` (a batch of prepared reads only) the ORM's root one (`GatewayContext.reads`).
   */
  get<K, V>(
    name: string,
    batch: (em: EntityManager, keys: readonly K[]) => Promise<ReadonlyArray<V | Error>>,
    options: { prepared?: boolean } = {},
  ): DataLoader<K, V> {
    let loader = this.loaders.get(name) as DataLoader<K, V> | undefined;
    if (!loader) {
      const em = () => (options.prepared ? this.ctx.reads : this.ctx.em);
      loader = new DataLoader<K, V>((keys) => batch(em(), keys), { maxBatchSize: 500 });
      this.loaders.set(name, loader as DataLoader<unknown, unknown>);
    }
    return loader;
  }

  /** The value `make` gives on this request's first call under `name`, the same one on every later call. */
  once<T>(name: string, make: () => T): T {
    const values = (this.values ??= new Map());
    if (values.has(name)) return values.get(name) as T;
    const value = make();
    values.set(name, value);
    return value;
  }
}

/**
 * The per-request context. A class rather than an object literal with a getter: every request
 * builds one, and instances of one class share a shape. The entity manager and the loaders are
 * made on first use: operations served from caches never pay for them.
 */
class RequestScope implements GatewayContext {
  readonly deadline: Deadline;
  recorded: ReadNotes | undefined = undefined;
  private forked: EntityManager | undefined;
  private registry: LoaderRegistry | undefined;

  constructor(
    readonly services: AppServices,
    readonly requestId: string,
    readonly principal: Principal | null,
    readonly meta: OperationMeta,
  ) {
    this.deadline = new Deadline(services.config.graphqlDeadlineMs);
  }

  get em(): EntityManager {
    return (this.forked ??= this.services.db.em());
  }

  get reads(): EntityManager {
    return this.services.db.root;
  }

  get loaders(): LoaderRegistry {
    return (this.registry ??= new LoaderRegistry(this));
  }
}

export function createContext(
  services: AppServices,
  requestId: string,
  principal: Principal | null,
  meta: OperationMeta = { headers: {} },
): GatewayContext {
  return new RequestScope(services, requestId, principal, meta);
}

/** For resolvers: the access check has already guaranteed a principal on protected fields. */
export function requirePrincipal(ctx: GatewayContext): Principal {
  if (!ctx.principal) throw unauthenticated();
  return ctx.principal;
}

/** What a domain service takes from a resolver: the request's entity manager, the clock, the events. */
export function serviceDeps(ctx: GatewayContext): ServiceDeps {
  return { em: ctx.em, clock: ctx.services.clock, events: ctx.services.events };
}
