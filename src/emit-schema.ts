import { mkdirSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { AccessPolicy } from './gateway/pipeline/access.js';
import { OPENAPI_FILE, gatewayOpenApi, printOpenApi } from './gateway/doors/openapi.js';
import { printGatewaySchema } from './gateway/schema/build.js';
import { SUBGRAPH_NAMES } from './config.js';
import { MODULES, gatewaySchema, subgraph, subgraphSdlFile } from './modules.js';

// `npm run schema`: the checked-in SDL, each federation subgraph's SDL and the OpenAPI document,
// from the composition root's modules.
const schema = gatewaySchema();
const target = resolve('schema', 'schema.graphql');
writeFileSync(target, printGatewaySchema(schema));
console.log(`wrote ${target}`);

writeFileSync(OPENAPI_FILE, printOpenApi(gatewayOpenApi(schema, new AccessPolicy(schema), MODULES)));
console.log(`wrote ${OPENAPI_FILE}`);

mkdirSync(resolve('schema', 'subgraphs'), { recursive: true });
for (const name of SUBGRAPH_NAMES) {
  writeFileSync(subgraphSdlFile(name), subgraph(name).sdl);
  console.log(`wrote ${subgraphSdlFile(name)}`);
}
