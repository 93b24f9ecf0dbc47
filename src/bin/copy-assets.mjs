#!/usr/bin/env node
// After `tsc -p src/tsconfig.build.json`: the files the compiled service reads at run time beside
// its code (console assets; the schema directory: REST operations, registered documents, the OpenAPI
// document), at the same relative paths as in the sources. package.json and README.md are read from
// the package root (src/kernel/package-root.ts).
import { cpSync } from 'node:fs';
import { URL, fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../../', import.meta.url));
for (const path of ['src/auth/assets', 'schema']) {
  cpSync(`${root}${path}`, `${root}dist/${path}`, { recursive: true });
}
