import { buildApp } from './app.js';
import { ConfigError, loadConfig } from './config.js';
import { formatDemoCredentials, isEmpty, seedDemo } from './seed.js';

/** Process entry: config → app → (demo seed on an empty database) → listen → graceful shutdown. */
export async function serve(env: Record<string, string | undefined> = process.env): Promise<void> {
  const config = loadConfig(env);
  const app = await buildApp(config);
  const { services } = app;
  // Subgraph processes share the whole gateway's database and leave seeding to it: several of them
  // starting on one empty database would race to seed it.
  const seed = config.demoSeed && !config.subgraph && (await isEmpty(services.db.em()));
  const creds = seed ? await seedDemo(services.db, services) : null;
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
