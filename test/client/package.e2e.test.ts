import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clientSnippets } from '../helpers/readme.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

const run = promisify(execFile);
const ROOT = join(import.meta.dirname, '../..');
const TSC = join(ROOT, 'node_modules/typescript/bin/tsc');
/** What the package's files may import: each other, its two dependencies, and node:fs for the file store. */
const ALLOWED_IMPORTS = new Set([
  'graphql',
  '@graphql-typed-document-node/core',
  'node:fs/promises',
  'node:path',
]);

interface LockEntry {
  version: string;
  dependencies?: Record<string, string>;
  dev?: boolean;
  devOptional?: boolean;
  peer?: boolean;
}

/** This process's environment without npm's npm_* variables (set when the tests run under `npm test`). */
const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^npm_/i.test(k)));

/** Every file under dir, relative to it. */
function filesUnder(dir: string, base = dir): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? filesUnder(join(dir, e.name), base) : [relative(base, join(dir, e.name))],
  );
}

/** The module specifiers of a .js or .d.ts file (static imports, re-exports, dynamic imports). */
function specifiers(text: string): string[] {
  return [
    ...text.matchAll(
      /(?:^|[\s;])(?:import|export)\s+(?:type\s+)?(?:[\w*${}\s,]+?\s+from\s+)?['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/g,
    ),
  ].map((m) => (m[1] ?? m[2])!);
}

/**
 * The packed client installed into an empty project outside the repository, as another project
 * would install it: the tarball from `npm run pack:client`, `npm install --offline`, plain `node`
 * and the repository's tsc against the installed .d.ts files (a file of its own, then README's
 * Clients snippets).
 */
describe('the @tidegate/client package', () => {
  let server: TestServer;
  let out: string;
  let app: string;
  let tarball: string;

  beforeAll(async () => {
    out = mkdtempSync(join(tmpdir(), 'tidegate-client-pack-'));
    app = mkdtempSync(join(tmpdir(), 'tidegate-client-app-'));
    const packed = await run(process.execPath, [join(ROOT, 'src/bin/pack-client.mjs'), '--out', out], {
      cwd: ROOT,
      env,
    });
    tarball = packed.stdout.trim().split('\n').at(-1)!;
    // What README's dashboard snippet uses beside the client, at the repository's locked versions.
    const devDependencies = ['ws', '@types/ws', '@types/node'];
    // `npm install --offline <tgz>` into a project without a lock resolves the tarball's dependency
    // ranges through the registry and fails (ENOTCACHED) even on a cache `npm ci` has just filled.
    // So the project's lock names the versions the repository's lock installed, as a project already
    // using graphql would have them: their tarballs are in that cache, and the install needs no network.
    const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')) as {
      packages: Record<string, LockEntry>;
    };
    const locked = (name: string): LockEntry => {
      const {
        dev: _dev,
        devOptional: _devOptional,
        peer: _peer,
        ...entry
      } = lock.packages[`node_modules/${name}`]!;
      return entry;
    };
    const pinned = Object.fromEntries(devDependencies.map((n) => [n, locked(n).version]));
    const packages: Record<string, object> = { '': { name: 'app', devDependencies: pinned } };
    const add = (name: string, flags: object) => {
      if (packages[`node_modules/${name}`]) return;
      const entry = locked(name);
      packages[`node_modules/${name}`] = { ...entry, ...flags };
      for (const dep of Object.keys(entry.dependencies ?? {})) add(dep, flags);
    };
    for (const name of ['graphql', '@graphql-typed-document-node/core']) add(name, { extraneous: true });
    for (const name of devDependencies) add(name, { dev: true });
    writeFileSync(
      join(app, 'package.json'),
      JSON.stringify({ name: 'app', private: true, type: 'module', devDependencies: pinned }),
    );
    writeFileSync(
      join(app, 'package-lock.json'),
      JSON.stringify({ name: 'app', lockfileVersion: 3, requires: true, packages }),
    );
    await run('npm', ['install', '--offline', '--no-audit', '--no-fund', tarball], { cwd: app, env });
    server = await startTestServer();
  }, 180_000);

  /** Runs the repository's tsc on the project of dir; returns the files it read (it fails on any error). */
  async function typecheck(dir: string): Promise<string[]> {
    const result = await run(process.execPath, [TSC, '-p', dir, '--listFiles'], { cwd: dir }).catch(
      (e: { stdout?: string; stderr?: string }) => ({ failed: `${e.stdout ?? ''}${e.stderr ?? ''}` }),
    );
    expect(result).not.toHaveProperty('failed');
    const listed = (result as { stdout: string }).stdout.trim().split('\n');
    // Only TypeScript's own lib files come from the repository.
    const typescriptLib = join(ROOT, 'node_modules/typescript/lib');
    expect(listed.filter((f) => !f.startsWith(app) && !f.startsWith(typescriptLib))).toEqual([]);
    return listed;
  }

  afterAll(async () => {
    await server?.close();
    for (const dir of [out, app]) if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('holds the compiled client and typed documents, nothing of the server', async () => {
    const { stdout } = await run('tar', ['-tzf', tarball]);
    const files = stdout.trim().split('\n').sort();
    expect(files).toContain('package/dist/client/index.js');
    expect(files).toContain('package/dist/client/index.d.ts');
    expect(files).toContain('package/dist/client/node.js');
    expect(files).toContain('package/dist/generated/graphql.d.ts');
    expect(
      files.filter(
        (f) => !/^package\/(dist\/(client|generated)\/[\w-]+\.(js|d\.ts)|package\.json|README\.md)$/.test(f),
      ),
    ).toEqual([]);

    const installed = join(app, 'node_modules/@tidegate/client');
    const manifest = JSON.parse(readFileSync(join(installed, 'package.json'), 'utf8')) as Record<
      string,
      unknown
    >;
    expect(manifest).toMatchObject({ name: '@tidegate/client', type: 'module' });
    expect(manifest.private).toBeUndefined();
    expect(Object.keys(manifest.dependencies as object).sort()).toEqual([
      '@graphql-typed-document-node/core',
      'graphql',
    ]);
    const imported = new Set<string>();
    for (const file of filesUnder(installed).filter((f) => /\.(js|d\.ts)$/.test(f))) {
      for (const spec of specifiers(readFileSync(join(installed, file), 'utf8'))) {
        if (!spec.startsWith('.')) imported.add(spec);
        else
          expect(spec, `${file} imports ${spec}`).toMatch(
            /^\.\.?\/(\.\.\/)?(client|generated)?\/?[\w-]+\.js$/,
          );
      }
    }
    expect([...imported].filter((s) => !ALLOWED_IMPORTS.has(s))).toEqual([]);
    expect(imported).toContain('graphql');
  });

  it('runs with plain node: GraphQL and a /v1 helper against the real server with an API key', async () => {
    writeFileSync(
      join(app, 'main.mjs'),
      `import { TidegateClient, TidegateError } from '@tidegate/client';
import { VesselDocument, ViewerDocument } from '@tidegate/client/generated';
import { FileTokenStore } from '@tidegate/client/node';

const client = new TidegateClient({ baseUrl: process.env.TIDEGATE_URL, apiKey: process.env.TIDEGATE_KEY });
const { viewer } = await client.graphql(ViewerDocument);
const { vessel } = await client.graphql(VesselDocument, { imo: '9074729' });
const lookup = await client.v1.vesselLookup({ imo: '9074729' });
const refused = await client.v1.vesselLookup({ imo: '9074728' }).catch((e) => e);
const store = new FileTokenStore(new URL('./tokens.json', import.meta.url).pathname);
console.log(JSON.stringify({
  resolved: import.meta.resolve('@tidegate/client'),
  viewer: { plan: viewer.plan, credentialKind: viewer.credentialKind },
  vessel: vessel?.name,
  lookup: { imo: lookup.imo, name: lookup.name },
  refused: { typed: refused instanceof TidegateError, status: refused.status, code: refused.code },
  stored: await store.load(),
}));
`,
    );
    const { stdout } = await run(process.execPath, ['main.mjs'], {
      cwd: app,
      env: { PATH: process.env.PATH, TIDEGATE_URL: server.url, TIDEGATE_KEY: server.key('PROFESSIONAL') },
    });
    const result = JSON.parse(stdout) as Record<string, unknown>;
    expect(result).toEqual({
      resolved: `file://${join(app, 'node_modules/@tidegate/client/dist/client/index.js')}`,
      viewer: { plan: 'PROFESSIONAL', credentialKind: 'api_key' },
      vessel: 'Northern Tern',
      lookup: { imo: '9074729', name: 'Northern Tern' },
      refused: { typed: true, status: 400, code: 'BAD_USER_INPUT' },
      stored: null,
    });
  });

  it('type-checks a project against the installed .d.ts files, not the repository', async () => {
    writeFileSync(
      join(app, 'check.ts'),
      `import { TidegateClient, TidegateError, type V1Result } from '@tidegate/client';
import { VesselDocument } from '@tidegate/client/generated';
import { FileTokenStore } from '@tidegate/client/node';

const client = new TidegateClient({ baseUrl: 'http://127.0.0.1:4000', oauth: { clientId: 'tgc_x' }, store: new FileTokenStore('t.json') });
const { vessel } = await client.graphql(VesselDocument, { imo: '9074729' });
export const name: string | undefined = vessel?.name;
// @ts-expect-error: the document's variable imo is required
await client.graphql(VesselDocument, {});
// @ts-expect-error: the document selects no such field
console.log(vessel?.noSuchField);
export const lookup: V1Result<'vesselLookup'> = await client.v1.vesselLookup({ imo: '9074729' });
// @ts-expect-error: no /v1 route has this name
await client.v1.noSuchRoute();
export const code: string = new TidegateError('X', 'm', { status: 400 }).code;
`,
    );
    writeFileSync(
      join(app, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          target: 'ES2022',
          lib: ['ES2023', 'DOM'],
          module: 'NodeNext',
          moduleResolution: 'NodeNext',
          strict: true,
          skipLibCheck: false,
          noEmit: true,
          types: [],
        },
        files: ['check.ts'],
      }),
    );
    const listed = await typecheck(app);
    const installed = join(app, 'node_modules/@tidegate/client/dist');
    expect(listed).toContain(join(installed, 'client/index.d.ts'));
    expect(listed).toContain(join(installed, 'client/node.d.ts'));
    expect(listed).toContain(join(installed, 'generated/graphql.d.ts'));
  });

  it("type-checks README's TypeScript snippets against the installed package", async () => {
    const snippets = clientSnippets();
    expect(snippets.join('\n')).toContain("from '@tidegate/client'");
    const dir = join(app, 'readme');
    mkdirSync(dir);
    const files = snippets.map((code, i) => {
      writeFileSync(join(dir, `snippet-${i + 1}.ts`), code);
      return `snippet-${i + 1}.ts`;
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
          noEmit: true,
          types: ['node'],
        },
        files,
      }),
    );
    const listed = await typecheck(dir);
    expect(listed).toContain(join(app, 'node_modules/@tidegate/client/dist/client/index.d.ts'));
    expect(listed).toContain(join(app, 'node_modules/@tidegate/client/dist/generated/graphql.d.ts'));
  });
});
