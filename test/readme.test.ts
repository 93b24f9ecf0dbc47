import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.js';
import { PACKAGE_ROOT } from '../src/kernel/package-root.js';

const README = join(PACKAGE_ROOT, 'README.md');
const readme = readFileSync(README, 'utf8');

/** Every variable `loadConfig` reads, recorded by an environment that answers nothing (so every default applies). */
function variablesRead(): Set<string> {
  const read = new Set<string>();
  const env = new Proxy({} as Record<string, string | undefined>, {
    get(_target, key) {
      if (typeof key === 'string') read.add(key);
      return undefined;
    },
  });
  loadConfig(env);
  return read;
}

/** The names written out in config.ts's source: `env.NAME` and `int('NAME', …)`-style readers. */
function variablesNamedInSource(): Set<string> {
  const source = readFileSync(join(PACKAGE_ROOT, 'src', 'config.ts'), 'utf8');
  const names = new Set<string>();
  for (const match of source.matchAll(/\benv\.([A-Z][A-Z0-9_]*)|\(\s*'([A-Z][A-Z0-9_]*)'/g))
    names.add(match[1] ?? match[2]!);
  return names;
}

/** GitHub's heading anchors: lower case, punctuation dropped, spaces as hyphens. */
function anchorsOf(markdown: string): Set<string> {
  const anchors = new Set<string>();
  let inCode = false;
  for (const line of markdown.split('\n')) {
    if (line.startsWith('```')) inCode = !inCode;
    else if (!inCode && /^#{1,6} /.test(line))
      anchors.add(
        line
          .replace(/^#+ /, '')
          .trim()
          .toLowerCase()
          .replace(/[^\p{L}\p{N}_\- ]/gu, '')
          .replace(/ /g, '-'),
      );
  }
  return anchors;
}

/** Relative links of a markdown file (outside code blocks), as written. */
function relativeLinksOf(markdown: string): string[] {
  const prose = markdown.replace(/^```[^]*?^```/gm, '');
  return [...prose.matchAll(/\]\(([^)\s]+)\)/g)]
    .map((match) => match[1]!)
    .filter((target) => !/^[a-z][a-z0-9+.-]*:/i.test(target));
}

/** README.md and the reference READMEs beside the code. */
function documentationFiles(): string[] {
  const found = [README];
  const walk = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory() && entry.name !== 'node_modules' && entry.name !== 'generated') walk(path);
      else if (entry.isFile() && entry.name.endsWith('.md')) found.push(path);
    }
  };
  walk(join(PACKAGE_ROOT, 'src'));
  walk(join(PACKAGE_ROOT, 'test'));
  return found;
}

describe('README.md', () => {
  it('documents every environment variable src/config.ts reads', () => {
    const read = variablesRead();
    const named = variablesNamedInSource();
    // The source scan guards the recording: a variable read only under some condition still counts.
    expect([...named].filter((name) => !read.has(name))).toEqual([]);
    expect(read).toContain('DATABASE_URL');
    expect(read).toContain('LIMIT_ANALYST_PER_MONTH');
    const missing = [...new Set([...read, ...named])].filter((name) => !readme.includes(`\`${name}\``));
    expect(missing).toEqual([]);
  });

  it('stays a front page of at most 600 lines', () => {
    expect(readme.split('\n').length).toBeLessThanOrEqual(600);
  });

  it('links only to files and headings that exist, as do the READMEs beside the code', () => {
    const broken: string[] = [];
    for (const file of documentationFiles()) {
      for (const link of relativeLinksOf(readFileSync(file, 'utf8'))) {
        const [path, anchor] = link.split('#', 2) as [string, string | undefined];
        const target = path === '' ? file : join(dirname(file), decodeURI(path));
        const from = relative(PACKAGE_ROOT, file);
        if (!existsSync(target)) broken.push(`${from}: ${link} (no such file)`);
        else if (anchor && target.endsWith('.md') && !anchorsOf(readFileSync(target, 'utf8')).has(anchor))
          broken.push(`${from}: ${link} (no such heading)`);
      }
    }
    expect(broken).toEqual([]);
  });
});
