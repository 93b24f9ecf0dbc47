// An ESLint rule (run by `npm run lint`) that fails on an import cycle between the folders of src/.
//
// Each folder directly under src/ (kernel, db, gateway, accounts, …) is one unit, and so is each file
// at the top of src/ (config.ts, app.ts, …). An import from unit A to unit B is refused when B already
// reaches A through other imports: that import closes a cycle, and the message names the whole path.
// Every kind of import counts — `import type`, `export … from`, dynamic `import()` — because a cycle
// of types is still a cycle of concepts: the layering is kernel → config → db → gateway → domains →
// the composition root (app.ts, cli.ts, main.ts, modules.ts, database.ts, seed.ts).
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';

const SPECIFIERS =
  /(?:^|[\s;])(?:import|export)\s+(?:type\s+)?(?:[^'";]*?\s+from\s+)?['"](\.{1,2}\/[^'"]+)['"]|import\(\s*['"](\.{1,2}\/[^'"]+)['"]\s*\)/g;

/** The relative module specifiers a source text imports (static, re-exports, dynamic). */
export function relativeImports(text) {
  return [...text.matchAll(SPECIFIERS)].map((m) => m[1] ?? m[2]);
}

/** The unit a path belongs to: its first folder under root, or the file's name without extension. */
export function unitOf(root, path) {
  const parts = relative(root, path).split(sep);
  if (parts[0] === '..' || parts[0] === '') return undefined;
  return parts.length === 1 ? parts[0].replace(/\.[^.]+$/, '') : parts[0];
}

function sourceFiles(dir) {
  const out = [];
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) out.push(...sourceFiles(path));
    else if (/\.(ts|mts|js|mjs)$/.test(name) && !name.endsWith('.d.ts')) out.push(path);
  }
  return out;
}

/** unit → (unit it imports → the first `file → specifier` that does). */
export function unitGraph(root) {
  const graph = new Map();
  for (const file of sourceFiles(root)) {
    const from = unitOf(root, file);
    for (const spec of relativeImports(readFileSync(file, 'utf8'))) {
      const to = unitOf(root, resolve(dirname(file), spec));
      if (!to || to === from) continue;
      if (!graph.has(from)) graph.set(from, new Map());
      const edges = graph.get(from);
      if (!edges.has(to)) edges.set(to, `${relative(root, file)} → ${spec}`);
    }
  }
  return graph;
}

/** The units from `start` to `goal` along imports (both included), or undefined when none. */
export function pathBetween(graph, start, goal) {
  const previous = new Map([[start, undefined]]);
  const queue = [start];
  while (queue.length > 0) {
    const unit = queue.shift();
    if (unit === goal) {
      const path = [];
      for (let u = goal; u !== undefined; u = previous.get(u)) path.unshift(u);
      return path;
    }
    for (const next of graph.get(unit)?.keys() ?? []) {
      if (!previous.has(next)) {
        previous.set(next, unit);
        queue.push(next);
      }
    }
  }
  return undefined;
}

/** Every cycle-closing import: [from unit, to unit, the path back] — empty when the layering holds. */
export function folderCycles(root) {
  const graph = unitGraph(root);
  const found = [];
  for (const [from, edges] of graph) {
    for (const to of edges.keys()) {
      const back = pathBetween(graph, to, from);
      if (back) found.push({ from, to, cycle: [from, ...back], site: edges.get(to) });
    }
  }
  return found;
}

const graphs = new Map();

const rule = {
  meta: {
    type: 'problem',
    docs: { description: 'no import cycle between the folders of src/' },
    schema: [{ type: 'object', properties: { root: { type: 'string' } }, additionalProperties: false }],
    messages: { cycle: 'Import from {{from}} to {{to}} closes a folder cycle: {{cycle}}' },
  },
  create(context) {
    const root = resolve(context.options[0]?.root ?? 'src');
    const file = context.physicalFilename ?? context.filename;
    const from = unitOf(root, file);
    if (!from) return {};
    if (!graphs.has(root)) graphs.set(root, unitGraph(root));
    const graph = graphs.get(root);
    const check = (node, spec) => {
      if (typeof spec !== 'string' || !spec.startsWith('.')) return;
      const to = unitOf(root, resolve(dirname(file), spec));
      if (!to || to === from) return;
      const back = pathBetween(graph, to, from);
      if (back)
        context.report({ node, messageId: 'cycle', data: { from, to, cycle: [from, ...back].join(' → ') } });
    };
    return {
      ImportDeclaration: (node) => check(node, node.source.value),
      ExportNamedDeclaration: (node) => node.source && check(node, node.source.value),
      ExportAllDeclaration: (node) => check(node, node.source.value),
      ImportExpression: (node) => node.source.type === 'Literal' && check(node, node.source.value),
    };
  },
};

export default { rules: { 'no-folder-cycles': rule } };
