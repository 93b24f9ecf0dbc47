import { buildApp } from './app.js';
import { ConfigError, loadConfig } from './config.js';
import {
  formatDemoCredentials,
  isEmpty,
  preparationPending,
  prepareDatabaseApart,
  seedDemo,
} from './seed.js';

/**
 * Process entry: config → migrations and (on an empty database) the demo seed, in a worker thread
 * (src/seed.ts, prepareDatabaseApart) → app → listen → graceful shutdown.
 */
export async function serve(env: Record<string, string | undefined> = process.env): Promise<void> {
  const config = loadConfig(env);
  // Subgraph processes share the whole gateway's database and leave seeding to it: several of them
  // starting on one empty database would race to seed it.
  const seed = config.demoSeed && !config.subgraph;
  // An in-memory SQLite database lives on the serving connection alone: prepared there.
  const inMemory = config.databaseUrl === ':memory:';
  const prepare = !inMemory && (await preparationPending(config.databaseUrl, seed));
  let creds = prepare ? await prepareDatabaseApart(env, seed) : null;
  const app = await buildApp(config);
  const { services } = app;
  if (inMemory && seed && (await isEmpty(services.db.em()))) creds = await seedDemo(services.db, services);
  const url = await app.listen();
  // To stderr, once, with the address actually listened on: stdout carries only the JSON log.
  if (creds) process.stderr.write(formatDemoCredentials(creds, url) + '\n');
  const serving = config.subgraph ? `subgraph ${config.subgraph}` : 'tidegate';
  services.logger.info(
    { url, database: services.db.dialect, subgraph: config.subgraph },
    `${serving} listening on ${url}`,
  );

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    services.logger.info({ signal }, 'shutting down');
    const force = setTimeout(() => {
      services.logger.error('graceful shutdown timed out; exiting');
      process.exit(1);
    }, config.shutdownGraceMs);
    force.unref();
    try {
      await app.close();
      process.exit(0);
    } catch (e) {
      services.logger.error({ err: e }, 'error during shutdown');
      process.exit(1);
    }
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
}

if (import.meta.url === `file://${process.argv[1]}`) {
  serve().catch((e: unknown) => {
    console.error(e instanceof ConfigError ? e.message : e);
    process.exit(1);
  });
}
