import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { PACKAGE_ROOT } from './package-root.js';

export { PACKAGE_ROOT };

/** Where `npm run build:playground` writes the bundle (not committed; `npm install` builds it). */
export const PLAYGROUND_DIR = join(PACKAGE_ROOT, 'dist', 'playground');

/** The built files the page links: content-hashed names, so they can be cached for good. */
export interface Manifest {
  script: string;
  style: string;
  /** The console's usage charts. */
  charts: { script: string; style: string };
  /** Every file the bundle may load (the two above, and any font or image they reference). */
  files: string[];
  /** Those of `files` that also have a gzip-compressed copy `<name>.gz` beside them. */
  gzipped: string[];
}

export const MANIFEST = 'manifest.json';

/** The bundle's manifest; null when there is none, or one from a build without every entry. */
export function readManifest(dir = PLAYGROUND_DIR): Manifest | null {
  try {
    const manifest = JSON.parse(readFileSync(join(dir, MANIFEST), 'utf8')) as Partial<Manifest>;
    return manifest.charts ? (manifest as Manifest) : null;
  } catch {
    return null;
  }
}
