import type { FastifyBaseLogger, FastifyServerOptions } from 'fastify';

// Fastify's typings name these types without exporting them.
type Bindings = Parameters<FastifyBaseLogger['child']>[0];
type ChildLoggerOptions = NonNullable<Parameters<FastifyBaseLogger['child']>[1]>;
type ChildLoggerFactory = NonNullable<FastifyServerOptions['childLoggerFactory']>;

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
  fatal(...args: unknown[]): void {
    const log = this.log;
    (log.fatal as Forward).apply(log, args);
  }
  error(...args: unknown[]): void {
    const log = this.log;
    (log.error as Forward).apply(log, args);
  }
  warn(...args: unknown[]): void {
    const log = this.log;
    (log.warn as Forward).apply(log, args);
  }
  info(...args: unknown[]): void {
    const log = this.log;
    (log.info as Forward).apply(log, args);
  }
  debug(...args: unknown[]): void {
    const log = this.log;
    (log.debug as Forward).apply(log, args);
  }
  trace(...args: unknown[]): void {
    const log = this.log;
    (log.trace as Forward).apply(log, args);
  }
  silent(...args: unknown[]): void {
    const log = this.log;
    (log.silent as Forward).apply(log, args);
  }

  child(bindings: Bindings, options?: ChildLoggerOptions): FastifyBaseLogger {
    return this.log.child(bindings, options);
  }
}

/** Fastify's `childLoggerFactory`: each request's logger, made when it first writes. */
export const requestLoggerFactory: ChildLoggerFactory = (logger, bindings, options) =>
  new RequestLogger(logger, bindings, options);
