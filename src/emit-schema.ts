import { writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { AccessPolicy } from './gateway/pipeline/access.js';
import { OPENAPI_FILE, gatewayOpenApi, printOpenApi } from './gateway/doors/openapi.js';
import { printGatewaySchema } from './gateway/schema/build.js';
import { MODULES, gatewaySchema } from './modules.js';

// `npm run schema`: the checked-in SDL and OpenAPI document, from the composition root's modules.
const schema = gatewaySchema();
const target = resolve('schema', 'schema.graphql');
writeFileSync(target, printGatewaySchema(schema));
console.log(`wrote ${target}`);

writeFileSync(OPENAPI_FILE, printOpenApi(gatewayOpenApi(schema, new AccessPolicy(schema), MODULES)));
console.log(`wrote ${OPENAPI_FILE}`);
