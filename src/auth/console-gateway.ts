import { join } from 'node:path';
import type { FastifyRequest } from 'fastify';
import { answeredError, loadOperations } from '../gateway/doors/rest.js';
import type { Operations, PreparedOperation } from '../gateway/pipeline/operation.js';
import type { AuditLog, OperationMeta } from '../gateway/schema/context.js';
import type { Clock } from '../kernel/clock.js';
import { PACKAGE_ROOT } from '../kernel/package-root.js';
import { sessionPrincipal, type SignedIn } from './sessions.js';

/** The console's named operations (typed by codegen like every document under schema/operations). */
export const CONSOLE_OPERATIONS_DIR = join(PACKAGE_ROOT, 'schema', 'operations', 'console');

/**
 * The console as a client of the gateway: each page reads and writes through named operations
 * run by the one pipeline with the signed-in user's session principal, so scope and plan
 * directives, admission, errors and audit (door `console`) are those of any other caller.
 */
export class ConsoleGateway {
  private readonly prepared = new Map<string, PreparedOperation>();

  constructor(
    private readonly operations: Operations,
    private readonly audit: AuditLog,
    private readonly clock: Clock,
    documents = loadOperations(CONSOLE_OPERATIONS_DIR),
  ) {
    // Prepared at start: a console operation the schema no longer accepts fails the start-up.
    for (const [name, document] of documents)
      this.prepared.set(name, operations.prepareTrusted(document, name));
  }

  /** Runs `name` for the signed-in user; the first error is thrown as the AppError it carries. */
  async run<Data, Variables extends object = Record<string, never>>(
    name: string,
    signedIn: SignedIn,
    request: FastifyRequest,
    variables?: Variables,
  ): Promise<Data> {
    const prepared = this.prepared.get(name);
    if (!prepared) throw new Error(`No console operation named ${name}`);
    const started = performance.now();
    const meta: OperationMeta = { headers: {} };
    const principal = sessionPrincipal(signedIn);
    const answer = await this.operations.run(prepared, {
      principal,
      requestId: request.id,
      variables: variables as Record<string, unknown> | undefined,
      meta,
      reportCost: false,
    });
    const first = answer.body.errors?.[0];
    this.audit.record({
      at: this.clock.now(),
      requestId: request.id,
      accountId: principal.accountId,
      credentialKind: principal.credential.kind,
      credentialId: principal.credential.id,
      ip: request.ip,
      userAgent: request.headers['user-agent'],
      operation: prepared.label,
      status: first ? answeredError(first).status : answer.status,
      durationMs: performance.now() - started,
      door: 'console',
      errorCode: meta.errorCodes?.[0] ?? null,
    });
    if (first) throw answeredError(first);
    return answer.body.data as Data;
  }
}
