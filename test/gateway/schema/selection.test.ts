import { buildSchema, execute, parse, type GraphQLResolveInfo } from 'graphql';
import { describe, expect, it } from 'vitest';
import { fieldsSelectedOn } from '../../../src/gateway/schema/selection.js';

const schema = buildSchema(`
  interface Named { name: String }
  type Ship implements Named { name: String imo: String crew: [Person] }
  type Person implements Named { name: String rank: String }
  union Thing = Ship | Person
  type Query { ship: Ship things: [Thing] named: [Named] }
`);

/** The resolve info of the root field `ship`, for `query`. */
function infoOf(query: string): GraphQLResolveInfo {
  let info: GraphQLResolveInfo | undefined;
  execute({
    schema,
    document: parse(query),
    fieldResolver: (_source, _args, _context, resolveInfo) => {
      if (resolveInfo.path.prev === undefined) info ??= resolveInfo;
      return null;
    },
  });
  return info!;
}

describe('fieldsSelectedOn', () => {
  it('collects the fields of each object type across fragments, aliases, interfaces and unions', () => {
    const info = infoOf(`
      query Q {
        ship { ...S alias: imo crew { rank } }
        things { ... on Person { name } ... on Ship { __typename } }
        named { name }
      }
      fragment S on Ship { name }
      fragment Unused on Person { rank }
      `);
    expect([...fieldsSelectedOn(info, 'Ship')].sort()).toEqual(['__typename', 'crew', 'imo', 'name']);
    expect([...fieldsSelectedOn(info, 'Person')].sort()).toEqual(['name', 'rank']);
    expect([...fieldsSelectedOn(info, 'Query')].sort()).toEqual(['named', 'ship', 'things']);
    expect(fieldsSelectedOn(info, 'Nothing').size).toBe(0);
  });

  it('counts fields under @skip and @include', () => {
    const info = infoOf('{ ship { name imo @skip(if: true) crew @include(if: false) { rank } } }');
    expect([...fieldsSelectedOn(info, 'Ship')].sort()).toEqual(['crew', 'imo', 'name']);
  });
});
