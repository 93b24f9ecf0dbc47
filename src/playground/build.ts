import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { constants, gzipSync } from 'node:zlib';
import { build } from 'esbuild';
import { MANIFEST, PLAYGROUND_DIR, readManifest, type Manifest } from '../kernel/browser-bundle.js';

/**
 * Bundles the playground (GraphiQL, React, our page script and their CSS) from node_modules into
 * `outDir`, so the service serves every byte itself: no CDN, works with the network cut. The
 * bundle is written to a staging directory and moved into place, so a server (or a concurrent
 * build) never sees half of it.
 */
export async function buildPlayground(outDir = PLAYGROUND_DIR): Promise<Manifest> {
  const staging = `${outDir}.tmp-${randomBytes(6).toString('hex')}`;
  try {
    const result = await build({
      entryPoints: {
        playground: fileURLToPath(new URL('./browser/main.ts', import.meta.url)),
        // The console's usage charts (uPlot): served from the same immutable bundle.
        'console-charts': fileURLToPath(new URL('./browser/console-charts.ts', import.meta.url)),
      },
      bundle: true,
      format: 'iife',
      minify: true,
      target: ['chrome110', 'firefox110', 'safari16'],
      outdir: staging,
      entryNames: '[name]-[hash]',
      assetNames: '[name]-[hash]',
      loader: { '.woff': 'file', '.woff2': 'file', '.ttf': 'file', '.svg': 'file', '.png': 'file' },
      define: { 'process.env.NODE_ENV': '"production"' },
      metafile: true,
      logLevel: 'warning',
    });
    const files = Object.keys(result.metafile.outputs).map((path) => basename(path));
    const output = (entry: string, extension: string): string => {
      const found = files.find((f) => f.startsWith(`${entry}-`) && f.endsWith(extension));
      if (!found) throw new Error(`the bundle has no ${entry} ${extension} (${files.join(', ')})`);
      return found;
    };
    const script = output('playground', '.js');
    const style = output('playground', '.css');
    const charts = { script: output('console-charts', '.js'), style: output('console-charts', '.css') };
    // Compressed once here, so serving a 1.3 MB script to a browser costs no CPU per request.
    const gzipped = files.filter((f) => /\.(js|css|svg|ttf)$/.test(f));
    for (const name of gzipped) {
      const path = join(staging, name);
      writeFileSync(`${path}.gz`, gzipSync(readFileSync(path), { level: constants.Z_BEST_COMPRESSION }));
    }
    const manifest: Manifest = { script, style, charts, files, gzipped };
    writeFileSync(join(staging, MANIFEST), JSON.stringify(manifest, null, 2));
    // A concurrent build (two test files) may have finished first: its output is the same bytes.
    if (JSON.stringify(readManifest(outDir)) === JSON.stringify(manifest)) return manifest;
    rmSync(outDir, { recursive: true, force: true });
    renameSync(staging, outDir);
    return manifest;
  } finally {
    if (existsSync(staging)) rmSync(staging, { recursive: true, force: true });
  }
}

/** Builds unless a bundle is already in place (tests call this; `npm install` always rebuilds). */
export async function ensurePlaygroundBuilt(outDir = PLAYGROUND_DIR): Promise<Manifest> {
  return readManifest(outDir) ?? buildPlayground(outDir);
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const started = Date.now();
  const manifest = await buildPlayground();
  console.log(
    `playground built in ${Date.now() - started} ms: ${manifest.files.join(', ')} → ${PLAYGROUND_DIR}`,
  );
}
