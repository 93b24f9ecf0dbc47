import Fastify from 'fastify';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { RequestLogger, requestLoggerFactory } from '../../../src/gateway/observability/request-logger.js';

/** A pino logger writing JSON lines into an array, and a count of the children made of it. */
function capture(level = 'info') {
  const lines: Array<Record<string, unknown>> = [];
  const logger = pino(
    { level },
    { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) },
  );
  let children = 0;
  // Counted on the root; pino's children inherit from it, so `this` decides whose child is made.
  const child = logger.child;
  logger.child = function (this: typeof logger, ...args: Parameters<typeof child>) {
    children++;
    return child.apply(this, args);
  } as typeof logger.child;
  return { logger, lines, children: () => children };
}

describe('RequestLogger', () => {
  it('makes its pino child only when a line is written, with the bindings and options it was given', () => {
    const { logger, lines, children } = capture('warn');
    const log = new RequestLogger(logger, { reqId: 'r-1' }, {});
    expect(log.level).toBe('warn');
    expect(children()).toBe(0);
    log.warn({ route: 'GET /v1/market' }, 'slow answer');
    log.error('failed %s', 'twice');
    expect(children()).toBe(1);
    expect(lines).toMatchObject([
      { level: 40, reqId: 'r-1', route: 'GET /v1/market', msg: 'slow answer' },
      { level: 50, reqId: 'r-1', msg: 'failed twice' },
    ]);
    // Below the level: nothing written.
    log.info('not written');
    expect(lines).toHaveLength(2);
  });

  it("takes a route's own level, and its own children carry both bindings", () => {
    const { logger, lines } = capture('warn');
    const log = new RequestLogger(logger, { reqId: 'r-2' }, { level: 'debug' });
    expect(log.level).toBe('debug');
    log.debug('written at debug');
    log.child({ part: 'audit' }).info('from a child');
    expect(lines).toMatchObject([
      { level: 20, reqId: 'r-2', msg: 'written at debug' },
      { level: 30, reqId: 'r-2', part: 'audit', msg: 'from a child' },
    ]);
    log.level = 'error';
    expect(log.level).toBe('error');
    log.warn('not written');
    expect(lines).toHaveLength(2);
  });

  it("is Fastify's request.log: the request id is on every line a request writes", async () => {
    const { logger, lines } = capture('info');
    const app = Fastify({
      loggerInstance: logger,
      childLoggerFactory: requestLoggerFactory,
      disableRequestLogging: true,
    });
    app.get('/quiet', async () => 'ok');
    app.get('/loud', { logLevel: 'debug' }, async (request) => {
      request.log.debug({ step: 1 }, 'handling');
      return 'ok';
    });
    try {
      const quiet = await app.inject({ url: '/quiet', headers: { 'x-request-id': 'q-1' } });
      expect(quiet.statusCode).toBe(200);
      const loud = await app.inject({ url: '/loud' });
      expect(loud.statusCode).toBe(200);
      expect(lines).toEqual([
        expect.objectContaining({ level: 20, step: 1, msg: 'handling', reqId: expect.any(String) }),
      ]);
    } finally {
      await app.close();
    }
  });
});
