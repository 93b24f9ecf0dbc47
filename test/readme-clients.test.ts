import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { clientSnippets } from './helpers/readme.js';

const ROOT = join(import.meta.dirname, '..');

it("type-checks every TypeScript snippet of README's Clients section against the client's types", () => {
  const snippets = clientSnippets();
  expect(snippets.length).toBeGreaterThan(0);
  // Inside the repository, so `ws` and the Node types resolve from its node_modules. The package's
  // entry points map to the sources here; test/client/package.e2e.test.ts checks the same imports
  // against the packed, installed package.
  const dir = mkdtempSync(join(ROOT, 'test', '.readme-snippets-'));
  try {
    const files = snippets.map((code, i) => {
      const file = join(dir, `snippet-${i + 1}.ts`);
      writeFileSync(file, code);
      return file;
    });
    writeFileSync(
      join(dir, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          target: 'ES2022',
          lib: ['ES2023', 'DOM', 'DOM.Iterable'],
          module: 'NodeNext',
          moduleResolution: 'NodeNext',
          strict: true,
          skipLibCheck: true,
          noEmit: true,
          types: ['node'],
          paths: {
            '@tidegate/client': [join(ROOT, 'src/client/index.ts')],
            '@tidegate/client/node': [join(ROOT, 'src/client/node.ts')],
            '@tidegate/client/generated': [join(ROOT, 'src/generated/graphql.ts')],
          },
        },
        files,
      }),
    );
    let output = '';
    try {
      execFileSync(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', dir], {
        encoding: 'utf8',
      });
    } catch (e) {
      output = `${(e as { stdout?: string }).stdout ?? ''}${(e as { stderr?: string }).stderr ?? ''}`;
    }
    expect(output).toBe('');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}, 120_000);
