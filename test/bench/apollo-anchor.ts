/**
 * The anchor for the GraphQL pipeline: a plain Apollo Server 5 with default settings,
 * standalone, serving the gateway's schema (gatewaySchema()) from the bench database in its own
 * process. No access checks, rate limits or audit: what Apollo costs on its own for the same query.
 * `node --import tsx test/bench/apollo-anchor.ts PORT DATABASE_URL`.
 */
import { ApolloServer } from '@apollo/server';
import { startStandaloneServer } from '@apollo/server/standalone';
import Fastify from 'fastify';
import { loadConfig } from '../../src/config.js';
import { openAppDatabase } from '../../src/database.js';
import { createContext, type AppServices, type GatewayContext } from '../../src/gateway/schema/context.js';
import { gatewaySchema } from '../../src/modules.js';
import { systemClock } from '../../src/kernel/clock.js';

const [port, databaseUrl] = process.argv.slice(2);
const config = loadConfig({ DATABASE_URL: databaseUrl! });
const db = await openAppDatabase(config.databaseUrl);
// The trivial query's resolver reads the database, the clock and the vessel cache only; the rest
// of the gateway's services (admission, audit, credentials …) belong to the pipeline measured apart.
const services = {
  config,
  db,
  clock: systemClock,
  logger: Fastify({ logger: false }).log,
} as unknown as AppServices;

const server = new ApolloServer<GatewayContext>({ schema: gatewaySchema() });
await startStandaloneServer(server, {
  listen: { port: Number(port), host: '127.0.0.1' },
  context: async () => createContext(services, 'bench', null),
});
console.log('apollo ready');
