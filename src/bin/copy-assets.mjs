#!/usr/bin/env node
// After `tsc -p src/tsconfig.build.json`: the files the compiled service reads at run time beside
// its code (console assets, the REST shims' operations, package.json for the version), at the same
// relative paths as in the sources.
import { cpSync } from 'node:fs';
import { URL, fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../../', import.meta.url));
for (const path of ['src/auth/assets', 'schema/operations', 'package.json']) {
  cpSync(`${root}${path}`, `${root}dist/${path}`, { recursive: true });
}
