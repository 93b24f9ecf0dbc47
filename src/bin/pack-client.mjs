#!/usr/bin/env node
// `npm run pack:client [-- --out DIR]`: the TypeScript client as the installable package
// `@tidegate/client`, packed into DIR (default dist/client-package/) as a .tgz.
//
// The package holds only the client (src/client/*.ts) and the generated files it needs
// (src/generated/graphql.ts: typed documents; src/generated/rest-routes.ts: the /v1 route table),
// compiled to ESM JavaScript with .d.ts beside it. Its package.json is written here, not kept in
// the repository: the version and the dependency ranges come from the root package.json, so they
// cannot drift from what the repository builds and tests with. Prints the tarball's path last.
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { URL, fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../../', import.meta.url));
const NAME = '@tidegate/client';
/** Runtime: graphql's print. Types only: TypedDocumentNode, which the .d.ts files import. */
const DEPENDENCIES = ['graphql', '@graphql-typed-document-node/core'];

function outDir(argv) {
  const i = argv.indexOf('--out');
  if (i === -1) return join(root, 'dist', 'client-package');
  const dir = argv[i + 1];
  if (!dir || dir.startsWith('--')) throw new Error('--out needs a directory: --out DIR');
  return resolve(dir);
}

function sources() {
  const client = readdirSync(join(root, 'src/client'))
    .filter((f) => f.endsWith('.ts'))
    .map((f) => join(root, 'src/client', f));
  return [...client, join(root, 'src/generated/graphql.ts'), join(root, 'src/generated/rest-routes.ts')];
}

function manifest() {
  const rootPkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
  const dependencies = {};
  for (const name of DEPENDENCIES) {
    const range = rootPkg.dependencies?.[name];
    if (!range) throw new Error(`package.json has no dependency ${name}, which the client package needs`);
    dependencies[name] = range;
  }
  const entry = (path) => ({ types: `./dist/${path}.d.ts`, default: `./dist/${path}.js` });
  return {
    name: NAME,
    version: rootPkg.version,
    description:
      'TypeScript client for tidegate: OAuth or API key, typed GraphQL, /v1 helpers, live subscriptions.',
    type: 'module',
    engines: rootPkg.engines,
    sideEffects: false,
    exports: {
      '.': entry('client/index'),
      './node': entry('client/node'),
      './generated': entry('generated/graphql'),
      './package.json': './package.json',
    },
    files: ['dist'],
    dependencies,
  };
}

const README = `# ${NAME}

The TypeScript client of tidegate (Node >= 20 and browsers).

- \`${NAME}\`: \`TidegateClient\`, errors, memory and browser token stores.
- \`${NAME}/node\`: \`FileTokenStore\` (a 0600 file; needs \`node:fs\`).
- \`${NAME}/generated\`: the typed GraphQL documents, e.g. \`client.graphql(ViewerDocument)\`.

The reference is src/client/README.md in the tidegate repository.
`;

export function packClient(out) {
  const staging = join(out, 'package');
  rmSync(staging, { recursive: true, force: true });
  mkdirSync(staging, { recursive: true });
  const tsconfig = join(staging, 'tsconfig.json');
  writeFileSync(
    tsconfig,
    JSON.stringify({
      extends: join(root, 'tsconfig.json'),
      compilerOptions: {
        noEmit: false,
        declaration: true,
        rootDir: join(root, 'src'),
        outDir: join(staging, 'dist'),
        typeRoots: [join(root, 'node_modules/@types')],
      },
      files: sources(),
      include: [],
    }),
  );
  execFileSync(process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '-p', tsconfig], {
    stdio: 'inherit',
  });
  rmSync(tsconfig);
  writeFileSync(join(staging, 'package.json'), `${JSON.stringify(manifest(), null, 2)}\n`);
  writeFileSync(join(staging, 'README.md'), README);
  const packed = JSON.parse(
    execFileSync('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', out], {
      cwd: staging,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'inherit'],
    }),
  );
  return join(out, packed[0].filename);
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const out = outDir(process.argv.slice(2));
  mkdirSync(out, { recursive: true });
  console.log(packClient(out));
}
