import type { FastifyBaseLogger, FastifyServerOptions } from 'fastify';

// Fastify's typings name these types without exporting them.
type Bindings = Parameters<FastifyBaseLogger['child']>[0];
type ChildLoggerOptions = NonNullable<Parameters<FastifyBaseLogger['child']>[1]>;
type ChildLoggerFactory = NonNullable<FastifyServerOptions['childLoggerFactory']>;

type Level = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';

/** A logging method of the request's logger, whatever pino overload it is called with. */
type Forward = (this: FastifyBaseLogger, ...args: unknown[]) => void;

/**
 * The request's logger (`request.log`): the server's logger bound to the request id, as Fastify
 * makes it, but made on the first line written. Pino writes a child's bindings out as JSON when
 * the child is made, about a microsecond a request, and at the usual LOG_LEVEL (warn) nearly no
 * request writes a line. Its level is the level the child would have: the route's if the route
 * sets one, else the server's.
 */
export class RequestLogger implements FastifyBaseLogger {
  private made: FastifyBaseLogger | undefined;

  constructor(
    private readonly parent: FastifyBaseLogger,
    private readonly bindings: Bindings,
    private readonly options: ChildLoggerOptions,
  ) {}

  /** The pino child, made once. */
  private get log(): FastifyBaseLogger {
    return (this.made ??= this.parent.child(this.bindings, this.options));
  }

  get level(): string {
    return this.made?.level ?? this.options.level ?? this.parent.level;
  }

  set level(level: string) {
    this.log.level = level;
  }

  // pino's LogFn is a set of overloads, and its methods read `this`: each call is passed on as made.
  private write(level: Level, args: unknown[]): void {
    const log = this.log;
    (log[level] as Forward).apply(log, args);
  }

  fatal(...args: unknown[]): void {
    this.write('fatal', args);
  }
  error(...args: unknown[]): void {
    this.write('error', args);
  }
  warn(...args: unknown[]): void {
    this.write('warn', args);
  }
  info(...args: unknown[]): void {
    this.write('info', args);
  }
  debug(...args: unknown[]): void {
    this.write('debug', args);
  }
  trace(...args: unknown[]): void {
    this.write('trace', args);
  }
  silent(...args: unknown[]): void {
    this.write('silent', args);
  }

  child(bindings: Bindings, options?: ChildLoggerOptions): FastifyBaseLogger {
    return this.log.child(bindings, options);
  }
}

/** Fastify's `childLoggerFactory`: each request's logger, made when it first writes. */
export const requestLoggerFactory: ChildLoggerFactory = (logger, bindings, options) =>
  new RequestLogger(logger, bindings, options);
