import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import {
  ErrorsAreMissesCache,
  type KeyValueCache,
  type KeyValueCacheSetOptions,
} from '@apollo/utils.keyvaluecache';
import type { FastifyBaseLogger } from 'fastify';
import {
  Kind,
  getOperationAST,
  parse,
  print,
  type DocumentNode,
  type FragmentDefinitionNode,
  type OperationDefinitionNode,
} from 'graphql';
import type { Redis } from 'ioredis';
import type { Config } from '../../config.js';
import { systemClock, type Clock } from '../../kernel/clock.js';
import { AppError } from '../../kernel/errors.js';
import { Lru } from '../../kernel/lru.js';
import { fastFailingRedis } from '../../kernel/counters.js';
import { usedFragments } from '../doors/rest.js';

export const OPERATIONS_DIR = join(import.meta.dirname, '..', '..', '..', 'schema', 'operations');

/** Apollo's automatic persisted queries, in Redis under a prefix: every process sees what one registered. */
export class RedisKeyValueCache implements KeyValueCache<string> {
  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
  ) {}

  async get(key: string): Promise<string | undefined> {
    return (await this.redis.get(this.prefix + key)) ?? undefined;
  }

  async set(key: string, value: string, options?: KeyValueCacheSetOptions): Promise<void> {
    // Apollo's ttl is in seconds; none (or null) keeps the entry until Redis evicts it.
    if (options?.ttl) await this.redis.set(this.prefix + key, value, 'EX', options.ttl);
    else await this.redis.set(this.prefix + key, value);
  }

  async delete(key: string): Promise<boolean> {
    return (await this.redis.del(this.prefix + key)) > 0;
  }
}

/** Most bytes of query text the in-process APQ store holds (the sum of the queries' lengths). */
export const APQ_MAX_BYTES = 8 * 1024 * 1024;

/** Apollo's automatic persisted queries in this process: the kernel's LRU, bounded by bytes. */
export class LruKeyValueCache implements KeyValueCache<string> {
  private readonly queries: Lru<string, string>;

  constructor(maxBytes: number, clock: Clock = systemClock) {
    this.queries = new Lru<string, string>({ maxBytes, clock });
  }

  async get(key: string): Promise<string | undefined> {
    return this.queries.get(key);
  }

  async set(key: string, value: string, options?: KeyValueCacheSetOptions): Promise<void> {
    // Apollo's ttl is in seconds; none (or null) keeps the entry until it is the one evicted.
    this.queries.set(key, value, value.length, options?.ttl ? options.ttl * 1000 : undefined);
  }

  async delete(key: string): Promise<boolean> {
    return this.queries.delete(key);
  }
}

export interface PersistedOperations {
  /** The APQ store passed to Apollo's `persistedQueries.cache`. */
  cache: KeyValueCache<string>;
  /** Set in TRUSTED_DOCUMENTS mode: only these documents may run. */
  trusted: TrustedDocuments | undefined;
  close(): Promise<void>;
}

/**
 * Redis when REDIS_URL is set (a query registered through one process is known to all), else an
 * LRU in this process. A Redis that does not answer makes lookups misses, not errors: the client
 * then simply sends the whole query again.
 */
export async function persistedOperations(
  config: Pick<Config, 'redisUrl' | 'redisPrefix' | 'trustedDocuments'>,
  logger: Pick<FastifyBaseLogger, 'warn'>,
): Promise<PersistedOperations> {
  const trusted = config.trustedDocuments ? TrustedDocuments.load() : undefined;
  if (!config.redisUrl) {
    return {
      cache: new LruKeyValueCache(APQ_MAX_BYTES),
      trusted,
      close: async () => {},
    };
  }
  const redis = fastFailingRedis(config.redisUrl, 500);
  await redis.connect();
  // Apollo prefixes its keys with `apq:`: they land at <REDIS_PREFIX>:apq:<sha256>.
  const cache = new ErrorsAreMissesCache(new RedisKeyValueCache(redis, `${config.redisPrefix}:`), {
    debug: () => {},
    info: () => {},
    warn: (message: unknown) => logger.warn({ err: message }, 'persisted queries: Redis did not answer'),
    error: (message: unknown) => logger.warn({ err: message }, 'persisted queries: Redis did not answer'),
  });
  return {
    cache,
    trusted,
    async close() {
      await redis.quit().catch(() => redis.disconnect());
    },
  };
}

/**
 * Trusted-documents mode: the operations registered in schema/operations/ (any depth) are the
 * only ones that run. A document matches when its chosen operation, with the fragments it uses,
 * prints the same as a registered one (sha256 of the printed form): whitespace, comments and
 * fragment order do not matter; any other change does.
 */
export class TrustedDocuments {
  private readonly hashes: ReadonlySet<string>;
  /** Sources and documents already judged: clients repeat the same few. */
  private readonly judgedSources = new Lru<string, boolean>({ maxEntries: 10_000 });
  private readonly judgedOperations = new WeakMap<OperationDefinitionNode, boolean>();

  constructor(documents: Iterable<DocumentNode>) {
    const hashes = new Set<string>();
    for (const document of documents) {
      for (const d of document.definitions) {
        if (d.kind === Kind.OPERATION_DEFINITION && d.name) hashes.add(operationHash(document, d));
      }
    }
    this.hashes = hashes;
  }

  static load(dir: string = OPERATIONS_DIR): TrustedDocuments {
    return new TrustedDocuments(graphqlFiles(dir).map((file) => parse(readFileSync(file, 'utf8'))));
  }

  get size(): number {
    return this.hashes.size;
  }

  /** For a request's source text (parsed once per distinct source). */
  allows(source: string, operationName?: string | null): boolean {
    const key = `${operationName ?? ''}\u0000${source}`;
    let verdict = this.judgedSources.get(key);
    if (verdict === undefined) {
      let document: DocumentNode | undefined;
      try {
        document = parse(source);
      } catch {
        document = undefined; // not even GraphQL: not a registered document
      }
      const operation = document && getOperationAST(document, operationName);
      verdict = !!operation && this.allowsDocument(document!, operation);
      this.judgedSources.set(key, verdict);
    }
    return verdict;
  }

  /**
   * For the operation the pipeline chose in a parsed document (the prepared ones are reused, so
   * this is a lookup).
   */
  allowsDocument(document: DocumentNode, operation: OperationDefinitionNode): boolean {
    let verdict = this.judgedOperations.get(operation);
    if (verdict === undefined) {
      verdict = this.hashes.has(operationHash(document, operation));
      this.judgedOperations.set(operation, verdict);
    }
    return verdict;
  }
}

function graphqlFiles(dir: string): string[] {
  return readdirSync(dir)
    .sort()
    .flatMap((name) => {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) return graphqlFiles(path);
      return name.endsWith('.graphql') ? [path] : [];
    });
}

/** sha256 of the chosen operation and the fragments it uses (sorted by name), printed. */
function operationHash(document: DocumentNode, operation: OperationDefinitionNode): string {
  const fragments = new Map<string, FragmentDefinitionNode>();
  for (const d of document.definitions)
    if (d.kind === Kind.FRAGMENT_DEFINITION) fragments.set(d.name.value, d);
  const used = usedFragments(operation, fragments);
  const printed = [operation, ...used.sort((a, b) => a.name.value.localeCompare(b.name.value))]
    .map((d) => print(d))
    .join('\n');
  return createHash('sha256').update(printed).digest('hex');
}

/** The refusal in trusted-documents mode. */
export function untrustedDocument(): AppError {
  return new AppError(
    'FORBIDDEN',
    'Only operations registered in schema/operations/ may run on this server (TRUSTED_DOCUMENTS=true)',
    { reason: 'UNTRUSTED_DOCUMENT' },
  );
}
