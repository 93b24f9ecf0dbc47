import { writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { AccessPolicy } from './access.js';
import { OPENAPI_FILE, gatewayOpenApi, printOpenApi } from './openapi.js';
import { gatewaySchema, printGatewaySchema } from './schema.js';

const target = resolve('schema', 'schema.graphql');
writeFileSync(target, printGatewaySchema());
console.log(`wrote ${target}`);

const schema = gatewaySchema();
writeFileSync(OPENAPI_FILE, printOpenApi(gatewayOpenApi(schema, new AccessPolicy(schema))));
console.log(`wrote ${OPENAPI_FILE}`);
