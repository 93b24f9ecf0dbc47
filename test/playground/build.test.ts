import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readManifest } from '../../src/kernel/browser-bundle.js';
import { buildPlayground, ensurePlaygroundBuilt } from '../../src/playground/build.js';

describe('the playground build', () => {
  let root: string;
  beforeAll(() => {
    root = mkdtempSync(join(tmpdir(), 'tidegate-playground-'));
  });
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it('writes content-hashed files, their gzip copies and a manifest; concurrent builds leave one whole bundle', async () => {
    const out = join(root, 'playground');
    const [first, second] = await Promise.all([buildPlayground(out), buildPlayground(out)]);
    expect(second).toEqual(first);
    expect(readManifest(out)).toEqual(first);
    expect(first.script).toMatch(/^playground-[A-Z0-9]{8}\.js$/);
    expect(first.style).toMatch(/^playground-[A-Z0-9]{8}\.css$/);
    expect(first.gzipped).toEqual(expect.arrayContaining([first.script, first.style]));
    expect(readdirSync(out).sort()).toEqual(
      ['manifest.json', ...first.files, ...first.gzipped.map((f) => `${f}.gz`)].sort(),
    );
    // No staging directory is left behind.
    expect(readdirSync(root)).toEqual(['playground']);
    for (const name of first.gzipped)
      expect(gunzipSync(readFileSync(join(out, `${name}.gz`))).equals(readFileSync(join(out, name)))).toBe(
        true,
      );
    const script = readFileSync(join(out, first.script), 'utf8');
    // GraphiQL, with our page script (it fetches the sandbox-key endpoint) bundled in.
    expect(script).toContain('/playground/sandbox-keys');
    expect(script).toContain('graphiql-container');
  });

  it('builds only when no bundle is there', async () => {
    const out = join(root, 'again');
    const built = await ensurePlaygroundBuilt(out);
    const files = readdirSync(out).map((f) => [f, readFileSync(join(out, f)).length]);
    rmSync(join(out, built.script));
    // The manifest is there, so nothing is rebuilt (npm install rebuilds; tests only fill a gap).
    expect(await ensurePlaygroundBuilt(out)).toEqual(built);
    expect(readdirSync(out)).toHaveLength(files.length - 1);
  });
});
