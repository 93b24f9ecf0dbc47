import { isObjectType, type GraphQLField, type GraphQLFieldResolver, type GraphQLSchema } from 'graphql';
import { getMetadataStorage, type ContainerType } from 'type-graphql';

/**
 * type-graphql runs every `@Arg` through an `async` validator, even with validation switched off,
 * so every query or mutation that takes an argument answers with a promise and pays a chain of
 * microtasks — about a fifth of a cached REST shim call (`/v1/vessels/lookup`). This replaces the
 * root fields' resolvers with ones that bind parameters synchronously whenever type-graphql would
 * pass the value through unchanged, and hand everything else to type-graphql's own resolver:
 *
 * - `@Arg` whose value is null, a string, number, boolean or Date (type-graphql returns these
 *   as they are when validation is off); object and list values go to type-graphql, which turns
 *   them into input-class instances;
 * - `@Args()` whose fields' values are all such values (a page's `first`/`after`/`offset`): an
 *   instance of the args class made as type-graphql makes it; a call with an object or list value
 *   among them goes to type-graphql;
 * - `@Ctx()` / `@Ctx('prop')`, `@Info()`, and `@Root()` without a declared type.
 *
 * A field keeps type-graphql's resolver when its method has any other parameter kind (custom
 * decorators), a middleware, an `@Authorized` rule, or a validator of its own. The
 * resolver class instance is the one type-graphql uses: both come from `resolverContainer`.
 */

type Resolver = GraphQLFieldResolver<unknown, Record<string, unknown>, Record<string, unknown>>;
type ParamMetadata = NonNullable<ReturnType<typeof getMetadataStorage>['queries'][number]['params']>[number];
type Binder = (root: unknown, args: Record<string, unknown>, context: unknown, info: unknown) => unknown;
/** What a root-field and a field-resolver handler have in common (type-graphql's metadata). */
type Handler = Pick<
  ReturnType<typeof getMetadataStorage>['fieldResolvers'][number],
  'middlewares' | 'roles' | 'params' | 'target' | 'methodName'
>;

/** Passed through from a binder when type-graphql must bind this call itself. */
const FALLBACK: unique symbol = Symbol('type-graphql binds this call');

const instances = new Map<Function, unknown>(); // eslint-disable-line @typescript-eslint/no-unsafe-function-type

/** One instance per resolver class, shared by type-graphql (buildSchema's `container`) and the fast path. */
export const resolverContainer: ContainerType = {
  // eslint-disable-next-line @typescript-eslint/no-unsafe-function-type
  get(someClass: Function) {
    let instance = instances.get(someClass);
    if (instance === undefined) {
      instance = new (someClass as new () => unknown)();
      instances.set(someClass, instance);
    }
    return instance;
  },
};

function isPassThrough(value: unknown): boolean {
  return (
    value === null ||
    value === undefined ||
    typeof value === 'string' ||
    typeof value === 'number' ||
    typeof value === 'boolean' ||
    value instanceof Date
  );
}

/** Whether an `@Arg` or `@Args` asks for validation of its own (the schema's is off). */
function validatesItself(param: ParamMetadata & { kind: 'arg' | 'args' }): boolean {
  return !!param.validateFn || (param.validateSettings !== undefined && param.validateSettings !== false);
}

/**
 * The field names of an `@ArgsType` class and of the args classes it extends, in the order
 * type-graphql reads them (the class's own, then each superclass's); undefined when `type` is not
 * one.
 */
// eslint-disable-next-line @typescript-eslint/no-unsafe-function-type
function argsFieldsOf(type: Function): string[] | undefined {
  const argumentTypes = getMetadataStorage().argumentTypes;
  const own = argumentTypes.find((t) => t.target === type);
  if (!own) return undefined;
  const names = (own.fields ?? []).map((f) => f.name);
  for (let parent = Object.getPrototypeOf(type) as { prototype?: unknown }; parent.prototype !== undefined;) {
    names.push(...(argumentTypes.find((t) => t.target === parent)?.fields ?? []).map((f) => f.name));
    parent = Object.getPrototypeOf(parent) as { prototype?: unknown };
  }
  return names;
}

/** A binder for one parameter, or undefined when type-graphql must bind every call of this method. */
function binderOf(param: ParamMetadata): Binder | undefined {
  switch (param.kind) {
    case 'arg': {
      if (validatesItself(param)) return undefined;
      const name = param.name;
      return (_root, args) => {
        const value = args[name];
        return isPassThrough(value) ? value : FALLBACK;
      };
    }
    case 'args': {
      if (validatesItself(param)) return undefined;
      const type = param.getType();
      const fields = typeof type === 'function' ? argsFieldsOf(type) : undefined;
      if (!fields) return undefined;
      const ArgsClass = type as new () => Record<string, unknown>;
      return (_root, args) => {
        const values: Record<string, unknown> = {};
        for (const name of fields) {
          const value = args[name];
          if (value === undefined) continue;
          if (!isPassThrough(value)) return FALLBACK;
          values[name] = value;
        }
        // As type-graphql makes it: a new instance, its unset fields not given dropped, the values over it.
        const instance = new ArgsClass();
        for (const key of Object.keys(instance))
          if (instance[key] === undefined && !(key in values)) delete instance[key];
        return Object.assign(instance, values);
      };
    }
    case 'context': {
      const property = param.propertyName;
      return property
        ? (_root, _args, context) => (context as Record<string, unknown>)[property]
        : (_root, _args, context) => context;
    }
    case 'info':
      return (_root, _args, _context, info) => info;
    case 'root': {
      const property = param.propertyName;
      const pick: Binder = property ? (root) => (root as Record<string, unknown>)[property] : (root) => root;
      if (!param.getType) return pick;
      // A typed @Root() is converted to that class unless it already is one (or null): the loaders
      // and lists hand out rows with their entity's prototype, which pass through unchanged.
      const type = param.getType();
      if (typeof type !== 'function') return undefined;
      return (root, args, context, info) => {
        const value = pick(root, args, context, info);
        return value === null || value === undefined || value instanceof type ? value : FALLBACK;
      };
    }
    default:
      return undefined;
  }
}

/** The parameter kinds type-graphql 2.0.0-rc.4 records; any other means its metadata changed. */
const KNOWN_PARAM_KINDS: ReadonlySet<string> = new Set([
  'arg',
  'args',
  'context',
  'info',
  'root',
  'pubSub',
  'custom',
]);

/** How many resolvers the fast path took over, of how many type-graphql's metadata described. */
export interface Rebinding {
  root: number;
  field: number;
}

/**
 * The fast path reads type-graphql's private metadata, so building the schema checks that the
 * metadata still describes it: every Query and Mutation field of the schema has a handler there,
 * every handler's parameters are of kinds this file knows, and the root pass took over at least
 * one resolver. After an upgrade that changed any of this the process fails at start with this
 * message instead of silently answering through type-graphql's slower resolvers.
 */
export function assertRebinding(
  schema: GraphQLSchema,
  resolvers: readonly Function[], // eslint-disable-line @typescript-eslint/no-unsafe-function-type
  rebinding: Rebinding,
  storage: Pick<
    ReturnType<typeof getMetadataStorage>,
    'queries' | 'mutations' | 'fieldResolvers'
  > = getMetadataStorage(),
): void {
  const included = new Set(resolvers);
  const problems: string[] = [];
  for (const [type, handlers] of [
    [schema.getQueryType(), storage.queries],
    [schema.getMutationType(), storage.mutations],
  ] as const) {
    if (!type) continue;
    const named = new Set(
      (Array.isArray(handlers) ? handlers : [])
        .filter((h) => included.has(h.target))
        .map((h) => h.schemaName),
    );
    const missing = Object.keys(type.getFields()).filter((name) => !named.has(name));
    if (missing.length > 0)
      problems.push(
        `${missing.length} ${type.name} field(s) have no handler in it (${missing.slice(0, 3).join(', ')})`,
      );
  }
  const handlers = [
    ...(storage.queries ?? []),
    ...(storage.mutations ?? []),
    ...(storage.fieldResolvers ?? []),
  ];
  const unknown = new Set(
    handlers
      .filter((h) => included.has(h.target))
      .flatMap((h) => (h.params ?? []).map((p) => String((p as { kind: unknown }).kind)))
      .filter((kind) => !KNOWN_PARAM_KINDS.has(kind)),
  );
  if (unknown.size > 0) problems.push(`unknown parameter kinds ${[...unknown].join(', ')}`);
  // A subgraph may have no field resolver the fast path can take, but never no root field at all.
  if (rebinding.root === 0) problems.push('no Query or Mutation resolver was rebound');
  if (problems.length > 0) {
    throw new Error(
      `type-graphql's resolver metadata no longer matches src/gateway/pipeline/sync-resolvers.ts: ${problems.join('; ')}. Update sync-resolvers.ts for this type-graphql version (rebound: ${rebinding.root} root, ${rebinding.field} field resolvers).`,
    );
  }
}

/**
 * Rewrites the Query and Mutation fields built from `resolvers` in place. Must be given the
 * schema that `buildSchema` made with `validate: false`, no global middlewares and
 * `container: resolverContainer`.
 */
export function bindRootResolversSynchronously(
  schema: GraphQLSchema,
  resolvers: readonly Function[], // eslint-disable-line @typescript-eslint/no-unsafe-function-type
): number {
  const storage = getMetadataStorage();
  const included = new Set(resolvers);
  let rewritten = 0;
  for (const [type, handlers] of [
    [schema.getQueryType(), storage.queries],
    [schema.getMutationType(), storage.mutations],
  ] as const) {
    if (!isObjectType(type)) continue;
    const fields = type.getFields();
    for (const handler of handlers) {
      if (!included.has(handler.target)) continue;
      if (rebind(fields[handler.schemaName], handler)) rewritten++;
    }
  }
  return rewritten;
}

/**
 * The same for the `@FieldResolver`s of resolver classes (a port call's `vessel`, `serviceOrders`
 * …): type-graphql's handler resolver allocates its resolver data, runs the (empty) middleware
 * chain and maps the parameters on every call, i.e. once per parent object of a list. The field of
 * the object type the resolver class names is rewritten; subclasses of that type keep
 * type-graphql's resolver. Same rules and same schema requirements as for the root fields.
 */
export function bindFieldResolversSynchronously(
  schema: GraphQLSchema,
  resolvers: readonly Function[], // eslint-disable-line @typescript-eslint/no-unsafe-function-type
): number {
  const storage = getMetadataStorage();
  const included = new Set(resolvers);
  let rewritten = 0;
  for (const handler of storage.fieldResolvers) {
    if (handler.kind !== 'external' || !included.has(handler.target) || !handler.getObjectType) continue;
    const objectClass = handler.getObjectType();
    const typeName = storage.objectTypes.find((o) => o.target === objectClass)?.name;
    const type = typeName ? schema.getType(typeName) : undefined;
    if (!isObjectType(type)) continue;
    if (rebind(type.getFields()[handler.schemaName], handler)) rewritten++;
  }
  return rewritten;
}

/**
 * Getter fields (`@Field() get aumUsd()`): type-graphql gives each a resolver that converts the root
 * to the getter's class, runs the (empty) middleware chain and reads the getter, so the executor
 * handles the field as a resolved one (a resolve info, a path and two callbacks) once per parent
 * object: three getters of a 100-protocol list are 300 such calls. For a root that is an instance of
 * the class, or carries its prototype as the rows of src/db/plain.ts do, reading the property is the
 * same thing, so the field is left to the executor with no resolver. A getter with a middleware or an
 * `@Authorized` rule, or named apart from its field, keeps type-graphql's resolver.
 */
export function readGettersDirectly(schema: GraphQLSchema): number {
  const storage = getMetadataStorage();
  let rewritten = 0;
  for (const handler of storage.fieldResolvers) {
    if (handler.kind !== 'internal' || handler.methodName !== handler.schemaName) continue;
    if ((handler.middlewares?.length ?? 0) > 0 || (handler.roles?.length ?? 0) > 0) continue;
    const target = handler.target as { prototype?: object };
    if (!target.prototype || !Object.getOwnPropertyDescriptor(target.prototype, handler.methodName)?.get)
      continue;
    const typeName = storage.objectTypes.find((o) => o.target === handler.target)?.name;
    const type = typeName ? schema.getType(typeName) : undefined;
    const field = isObjectType(type) ? type.getFields()[handler.schemaName] : undefined;
    if (!field?.resolve) continue;
    field.resolve = undefined;
    rewritten++;
  }
  return rewritten;
}

/**
 * Replaces the field's resolver with one that binds the handler's parameters synchronously; false
 * (nothing changed) when the handler has middlewares or roles or a parameter we do not bind.
 */
function rebind(field: GraphQLField<unknown, unknown> | undefined, handler: Handler): boolean {
  if (!field?.resolve) return false;
  if ((handler.middlewares?.length ?? 0) > 0 || (handler.roles?.length ?? 0) > 0) return false;
  const params = [...(handler.params ?? [])].sort((a, b) => a.index - b.index);
  const binders = params.map(binderOf);
  if (binders.some((b) => b === undefined)) return false;
  field.resolve = fastResolver(
    binders as Binder[],
    resolverContainer.get(handler.target, undefined as never) as Record<string, unknown>,
    handler.methodName,
    field.resolve as Resolver,
  );
  return true;
}

function fastResolver(
  binders: Binder[],
  instance: Record<string, unknown>,
  method: string,
  original: Resolver,
) {
  const fn = instance[method] as (...args: unknown[]) => unknown;
  return (root: unknown, args: Record<string, unknown>, context: unknown, info: unknown) => {
    const values = new Array<unknown>(binders.length);
    for (let i = 0; i < binders.length; i++) {
      const value = binders[i]!(root, args, context, info);
      if (value === FALLBACK) return original(root, args, context as Record<string, unknown>, info as never);
      values[i] = value;
    }
    return fn.apply(instance, values);
  };
}
