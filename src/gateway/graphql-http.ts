import { ApolloServer, type ApolloServerPlugin } from '@apollo/server';
import { ApolloServerPluginCacheControlDisabled } from '@apollo/server/plugin/disabled';
import { ApolloServerPluginLandingPageDisabled } from '@apollo/server/plugin/disabled';
import { fastifyApolloDrainPlugin, fastifyApolloHandler } from '@as-integrations/fastify';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { GraphQLSchema } from 'graphql';
import { AppError } from '../kernel/errors.js';
import { checkAccess, type AccessPolicy } from './access.js';
import { createContext, type AppServices, type GatewayContext } from './context.js';
import { formatGraphQLError, toGraphQLError } from './errors.js';
import { CompiledOperations, fastGraphQL, type GraphQLHandler } from './graphql-fast.js';

/** When a plan and scopes are both missing, one error says both (402 wins the status). */
export function combineDenials(errors: AppError[]): AppError {
  const [first, ...rest] = errors as [AppError, ...AppError[]];
  if (rest.length === 0) return first;
  const details = Object.assign({}, ...errors.map((e) => e.details));
  return new AppError(first.code, errors.map((e) => e.message).join('. '), details);
}

/** Runs the access check and admission after parsing and validation, before any resolver. */
function accessPlugin(policy: AccessPolicy, services: AppServices): ApolloServerPlugin<GatewayContext> {
  return {
    async requestDidStart() {
      return {
        async didResolveOperation(rc) {
          // No operation could be picked (several without operationName, or an unknown name):
          // Apollo answers that itself with 400 OPERATION_RESOLUTION_FAILURE.
          if (!rc.operation) return;
          const ctx = rc.contextValue;
          const requirements = policy.requirements(rc.document, rc.operation.name?.value);
          ctx.meta.operation = `${requirements.operationType} ${requirements.operationName ?? '(anonymous)'}`;
          const denied = checkAccess(requirements, ctx.principal);
          if (denied.length > 0) {
            if (ctx.principal)
              Object.assign(ctx.meta.headers, await services.admission.peek(ctx.principal, requirements));
            throw toGraphQLError(combineDenials(denied));
          }
          if (ctx.principal) {
            try {
              Object.assign(
                ctx.meta.headers,
                (await services.admission.admit(ctx.principal, requirements)).headers,
              );
            } catch (e) {
              // A rejection still carries X-RateLimit-* and Retry-After; willSendResponse copies them.
              if (e instanceof AppError) Object.assign(ctx.meta.headers, e.headers);
              throw e instanceof AppError ? toGraphQLError(e) : e;
            }
          }
        },
        async willSendResponse(rc) {
          for (const [name, value] of Object.entries(rc.contextValue.meta.headers)) {
            rc.response.http.headers.set(name.toLowerCase(), value);
          }
        },
      };
    },
  };
}

/** GraphQL over HTTP: a POST body must be application/json; anything else is 415 before parsing. */
function requireJsonBody(request: FastifyRequest, _reply: FastifyReply, done: (error?: Error) => void): void {
  if (request.method !== 'POST') return done();
  const header = request.headers['content-type'];
  if (header === 'application/json') return done(); // the common spelling, without parsing it
  const type = (header ?? '').split(';')[0]!.trim().toLowerCase();
  if (type === 'application/json') return done();
  done(
    new AppError(
      'UNSUPPORTED_MEDIA_TYPE',
      `POST /graphql needs Content-Type: application/json (got '${type || 'none'}')`,
    ),
  );
}

export async function registerGraphQL(
  app: FastifyInstance,
  schema: GraphQLSchema,
  policy: AccessPolicy,
  services: AppServices,
): Promise<ApolloServer<GatewayContext>> {
  const apollo = new ApolloServer<GatewayContext>({
    schema,
    introspection: true,
    csrfPrevention: true,
    // main.ts owns the signals: Apollo's own handlers would re-raise them and kill in-flight requests.
    stopOnTerminationSignals: false,
    validationRules: services.validationRules,
    includeStacktraceInErrorResponses: false,
    plugins: [
      fastifyApolloDrainPlugin(app),
      accessPlugin(policy, services),
      ApolloServerPluginCacheControlDisabled(),
      ApolloServerPluginLandingPageDisabled(),
    ],
    formatError: (formatted, error) =>
      formatGraphQLError(formatted, error, (e) =>
        services.logger.error({ err: e }, 'unexpected GraphQL error'),
      ),
  });
  await apollo.start();
  const handler = fastifyApolloHandler(apollo, {
    context: async (request) => {
      const ctx = createContext(services, request.id, request.principal ?? null);
      request.gatewayMeta = ctx.meta;
      return ctx;
    },
  });
  app.route({
    method: ['GET', 'POST'],
    url: '/graphql',
    onRequest: requireJsonBody,
    // Operations seen before are answered by the compiled fast path; the rest by Apollo's handler.
    handler: fastGraphQL(
      new CompiledOperations(schema, policy, services.validationRules),
      services,
      // Apollo's handler types its reply payload as a string; it takes any request of this route.
      handler as unknown as GraphQLHandler,
    ),
    config: { audit: 'graphql', graphql: true },
  });
  app.route({
    method: ['PUT', 'PATCH', 'DELETE', 'OPTIONS'],
    url: '/graphql',
    config: { graphql: true },
    handler: async (request, reply) =>
      reply
        .code(405)
        .header('allow', 'GET, POST')
        .send({
          errors: [
            {
              message: `${request.method} is not supported on /graphql; use GET for queries or POST`,
              extensions: { code: 'METHOD_NOT_ALLOWED' },
            },
          ],
        }),
  });
  return apollo;
}
