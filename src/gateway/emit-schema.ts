import { writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { printGatewaySchema } from './schema.js';

const target = resolve('schema', 'schema.graphql');
writeFileSync(target, printGatewaySchema());
console.log(`wrote ${target}`);
