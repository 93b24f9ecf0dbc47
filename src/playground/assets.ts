import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { PACKAGE_ROOT } from '../kernel/package-root.js';

export { PACKAGE_ROOT };

/** Where `npm run build:playground` writes the bundle (not committed; `npm install` builds it). */
export const PLAYGROUND_DIR = join(PACKAGE_ROOT, 'dist', 'playground');

/** The built files the page links: content-hashed names, so they can be cached for good. */
export interface Manifest {
  script: string;
  style: string;
  /** Every file the bundle may load (the two above, and any font or image they reference). */
  files: string[];
  /** Those of `files` that also have a gzip-compressed copy `<name>.gz` beside them. */
  gzipped: string[];
}

export const MANIFEST = 'manifest.json';

export function readManifest(dir = PLAYGROUND_DIR): Manifest | null {
  try {
    return JSON.parse(readFileSync(join(dir, MANIFEST), 'utf8')) as Manifest;
  } catch {
    return null;
  }
}
