import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { ESLint } from 'eslint';
import tseslint from 'typescript-eslint';
import { afterEach, describe, expect, it } from 'vitest';
// @ts-expect-error -- a plain ES module without type declarations (it runs inside ESLint)
import folderLayers, { folderCycles, relativeImports } from '../../src/bin/folder-layers.mjs';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** A throw-away src/ tree: path → source text. */
function tree(files: Record<string, string>): string {
  const root = mkdtempSync(join(tmpdir(), 'folder-layers-'));
  dirs.push(root);
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(root, 'src', path)), { recursive: true });
    writeFileSync(join(root, 'src', path), text);
  }
  return root;
}

type Cycle = { from: string; to: string; cycle: string[]; site: string };

describe('folderCycles', () => {
  it('finds a cycle between two folders, whatever kind of import closes it', () => {
    for (const back of [
      "import { a } from '../a/a.js';",
      "import type { A } from '../a/a.js';",
      "export { a } from '../a/a.js';",
      "const load = () => import('../a/a.js');",
    ]) {
      const root = tree({
        'a/a.ts': "import { b } from '../b/b.js';\nexport const a = b;\nexport type A = 1;",
        'b/b.ts': `${back}\nexport const b = 1;`,
      });
      const found = (folderCycles(join(root, 'src')) as Cycle[]).map((c) => c.cycle.join(' → '));
      expect(found, back).toEqual(['a → b → a', 'b → a → b']);
    }
  });

  it('follows a cycle through several folders and top-level files', () => {
    const root = tree({
      'kernel/k.ts': "import { config } from '../config.js';\nexport const k = config;",
      'config.ts': "import { d } from './db/d.js';\nexport const config = d;",
      'db/d.ts': "import { k } from '../kernel/k.js';\nexport const d = k;",
    });
    const found = folderCycles(join(root, 'src')) as Cycle[];
    expect(found.find((c) => c.from === 'kernel')?.cycle).toEqual(['kernel', 'config', 'db', 'kernel']);
    expect(found.find((c) => c.from === 'kernel')?.site).toBe('kernel/k.ts → ../config.js');
  });

  it('accepts layers: imports within a folder and downward only', () => {
    const root = tree({
      'kernel/k.ts': "import { j } from './j.js';\nexport const k = j;",
      'kernel/j.ts': 'export const j = 1;',
      'db/d.ts': "import { k } from '../kernel/k.js';\nexport const d = k;",
      'app.ts':
        "import { d } from './db/d.js';\nimport { k } from './kernel/k.js';\nexport const app = [d, k];",
    });
    expect(folderCycles(join(root, 'src'))).toEqual([]);
  });

  it('reads static, type-only, re-exported and dynamic specifiers, and ignores packages', () => {
    expect(
      relativeImports(
        [
          "import { a } from './a.js';",
          "import type { B } from '../b/b.js';",
          "import './side-effect.js';",
          "export * from './c.js';",
          "const d = await import('../d/d.js');",
          "import { readFileSync } from 'node:fs';",
          "import Fastify from 'fastify';",
        ].join('\n'),
      ),
    ).toEqual(['./a.js', '../b/b.js', './side-effect.js', './c.js', '../d/d.js']);
  });

  it('finds none in tidegate itself', () => {
    expect(folderCycles('src')).toEqual([]);
  });
});

describe('the ESLint rule', () => {
  it('reports the import that closes a cycle, naming the path back', async () => {
    const root = tree({
      'gateway/g.ts': "import { e } from '../events/e.js';\nexport const g = e;",
      'events/e.ts': "import type { G } from '../gateway/types.js';\nexport const e: G = 1;",
      'gateway/types.ts': 'export type G = number;',
    });
    const eslint = new ESLint({
      cwd: root,
      overrideConfigFile: true,
      overrideConfig: [
        {
          files: ['src/**/*.ts'],
          languageOptions: { parser: tseslint.parser },
          plugins: { tidegate: folderLayers },
          rules: { 'tidegate/no-folder-cycles': ['error', { root: join(root, 'src') }] },
        },
      ],
    });
    const [result] = await eslint.lintFiles([join(root, 'src/events/e.ts')]);
    expect(result!.messages.map((m) => m.message)).toEqual([
      'Import from events to gateway closes a folder cycle: events → gateway → events',
    ]);
  });
});
