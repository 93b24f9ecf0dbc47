import {
  isAbstractType,
  TypeInfo,
  visit,
  visitWithTypeInfo,
  type GraphQLResolveInfo,
  type OperationDefinitionNode,
} from 'graphql';

/**
 * Every field an operation selects on each object type, anywhere in it: through fragments, and a
 * field selected on an interface or union counted for each of its object types. Fragments the
 * operation does not use count too, and so do fields under `@skip`/`@include`: more fields, never
 * fewer. A read that keeps rows for the whole request (a read-ahead map) may leave out the
 * properties no selected field reads. Worked out once per operation.
 */
const selections = new WeakMap<OperationDefinitionNode, Map<string, ReadonlySet<string>>>();

export function fieldsSelectedOn(info: GraphQLResolveInfo, typeName: string): ReadonlySet<string> {
  let byType = selections.get(info.operation);
  if (!byType) {
    const found = new Map<string, Set<string>>();
    const typeInfo = new TypeInfo(info.schema);
    const visitor = visitWithTypeInfo(typeInfo, {
      Field(node) {
        const parent = typeInfo.getParentType();
        if (!parent) return;
        const types = isAbstractType(parent) ? info.schema.getPossibleTypes(parent) : [parent];
        for (const type of types) {
          let fields = found.get(type.name);
          if (!fields) found.set(type.name, (fields = new Set()));
          fields.add(node.name.value);
        }
      },
    });
    visit(info.operation, visitor);
    for (const fragment of Object.values(info.fragments)) visit(fragment, visitor);
    byType = found;
    selections.set(info.operation, byType);
  }
  return byType.get(typeName) ?? new Set();
}
