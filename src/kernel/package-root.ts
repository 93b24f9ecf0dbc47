import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The package root (the folder of package.json), found by walking up from this file, so it is the
 * same folder whether the sources run (src/kernel) or the compiled output does (dist/src/kernel).
 */
function packageRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'package.json'))) {
    const parent = dirname(dir);
    if (parent === dir) throw new Error('no package.json above this file');
    dir = parent;
  }
  return dir;
}

export const PACKAGE_ROOT = packageRoot();

/** The `version` of package.json. */
export function packageVersion(): string {
  return (JSON.parse(readFileSync(join(PACKAGE_ROOT, 'package.json'), 'utf8')) as { version: string })
    .version;
}
