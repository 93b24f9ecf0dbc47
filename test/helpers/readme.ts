import { readFileSync } from 'node:fs';
import { join } from 'node:path';

const ROOT = join(import.meta.dirname, '../..');

/** The ```ts blocks of README.md's "## Clients" section, whatever it holds today. */
export function clientSnippets(): string[] {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const start = readme.indexOf('\n## Clients\n');
  if (start === -1) throw new Error('README.md has no "## Clients" section');
  const next = readme.indexOf('\n## ', start + 1);
  const section = readme.slice(start, next === -1 ? undefined : next);
  return [...section.matchAll(/^```ts\n([\s\S]*?)^```$/gm)].map((m) => m[1]!);
}
