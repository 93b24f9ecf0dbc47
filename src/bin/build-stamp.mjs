#!/usr/bin/env node
// The last step of `npm run build`: writes dist/.sources, a digest of what the build read (src/,
// schema/, package.json, tsconfig.json: paths and contents, not times, since npm run schema and
// codegen rewrite files without changing them). `--check` exits 1 when dist/ is missing or was built
// from other sources (the test run's global setup rebuilds then).
import { createHash } from 'node:crypto';
import { readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { URL, fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../../', import.meta.url));
const stamp = join(root, 'dist', '.sources');

function files(path) {
  if (!statSync(path).isDirectory()) return [path];
  return readdirSync(path)
    .sort()
    .flatMap((entry) => files(join(path, entry)));
}

function digest() {
  const hash = createHash('sha256');
  for (const path of ['src', 'schema', 'package.json', 'tsconfig.json'].flatMap((p) =>
    files(join(root, p)),
  )) {
    hash.update(relative(root, path)).update('\0').update(readFileSync(path)).update('\0');
  }
  return hash.digest('hex');
}

if (process.argv[2] === '--check') {
  let built = '';
  try {
    built = readFileSync(stamp, 'utf8');
  } catch {
    // no stamp: dist/ missing or built before stamps existed
  }
  process.exitCode = built === digest() ? 0 : 1;
} else {
  writeFileSync(stamp, digest());
}
