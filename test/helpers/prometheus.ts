/**
 * A strict reader of the Prometheus text exposition format (version 0.0.4): every line is a
 * HELP or TYPE comment or a sample of a declared family; label values are unescaped; histogram
 * buckets must be cumulative and end at +Inf with the _count. Anything else throws, naming the line.
 */
export interface Series {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export interface Family {
  name: string;
  type: 'counter' | 'gauge' | 'histogram' | 'summary' | 'untyped';
  help: string;
  series: Series[];
}

const NAME = '[a-zA-Z_:][a-zA-Z0-9_:]*';
const SAMPLE = new RegExp(`^(${NAME})(?:\\{(.*)\\})? (\\S+)(?: (-?\\d+))?$`);
const LABEL = /^([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\[\\"n])*)"(,|$)/;
const SUFFIXES: Record<Family['type'], string[]> = {
  counter: [''],
  gauge: [''],
  untyped: [''],
  histogram: ['_bucket', '_sum', '_count'],
  summary: ['', '_sum', '_count'],
};

export function parsePrometheus(text: string): Map<string, Family> {
  const families = new Map<string, Family>();
  const lines = text.split('\n');
  if (lines.pop() !== '') throw new Error('exposition must end with a newline');
  lines.forEach((line, i) => {
    const fail = (why: string) => {
      throw new Error(`line ${i + 1}: ${why}: ${line}`);
    };
    if (line === '') return; // the format ignores empty lines
    const help = new RegExp(`^# HELP (${NAME}) (.*)$`).exec(line);
    const type = new RegExp(`^# TYPE (${NAME}) (counter|gauge|histogram|summary|untyped)$`).exec(line);
    if (help) {
      if (families.has(help[1]!)) fail('second HELP');
      families.set(help[1]!, { name: help[1]!, type: 'untyped', help: help[2]!, series: [] });
      return;
    }
    if (type) {
      const family = families.get(type[1]!) ?? fail('TYPE before HELP');
      if (family.series.length > 0) fail('TYPE after samples');
      family.type = type[2] as Family['type'];
      return;
    }
    if (line.startsWith('#')) fail('unexpected comment');
    const sample = SAMPLE.exec(line) ?? fail('not a sample');
    const [, name, rawLabels = '', rawValue] = sample;
    const family = [...families.values()].find((f) =>
      SUFFIXES[f.type].some((suffix) => `${f.name}${suffix}` === name),
    );
    if (!family) fail('sample of an undeclared family');
    const value = floatOf(rawValue!) ?? fail('bad value');
    const labels: Record<string, string> = {};
    let rest = rawLabels;
    while (rest.length > 0) {
      const label = LABEL.exec(rest) ?? fail('bad label');
      if (label[1]! in labels) fail(`label ${label[1]} twice`);
      labels[label[1]!] = label[2]!.replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
      rest = rest.slice(label[0].length);
    }
    family!.series.push({ name: name!, labels, value });
  });
  for (const family of families.values()) if (family.type === 'histogram') checkHistogram(family);
  return families;
}

function checkHistogram(family: Family): void {
  const groups = new Map<string, Series[]>();
  for (const s of family.series) {
    const { le: _le, ...rest } = s.labels;
    const key = JSON.stringify(rest);
    groups.set(key, [...(groups.get(key) ?? []), s]);
  }
  for (const [key, series] of groups) {
    const buckets = series.filter((s) => s.name.endsWith('_bucket'));
    const count = series.find((s) => s.name.endsWith('_count'));
    const last = buckets.at(-1);
    if (!count || last?.labels.le !== '+Inf' || last.value !== count.value)
      throw new Error(`${family.name}${key}: buckets must end at +Inf with the count`);
    buckets.reduce((previous, b) => {
      if (b.value < previous) throw new Error(`${family.name}${key}: buckets are not cumulative`);
      return b.value;
    }, 0);
  }
}

/** The value of the series matching `labels` (for a histogram: its _count); 0 when it does not exist yet. */
export function seriesValue(
  families: Map<string, Family>,
  name: string,
  labels: Record<string, string> = {},
): number {
  const family = families.get(name);
  if (!family) return 0;
  const wanted = family.type === 'histogram' ? `${name}_count` : name;
  const found = family.series.find(
    (s) => s.name === wanted && Object.entries(labels).every(([k, v]) => s.labels[k] === v),
  );
  return found?.value ?? 0;
}

/** Go's ParseFloat, which Prometheus uses: NaN and Inf in any letter case (prom-client writes `Nan`). */
function floatOf(raw: string): number | undefined {
  if (/^nan$/i.test(raw)) return NaN;
  const inf = /^([+-]?)inf$/i.exec(raw);
  if (inf) return inf[1] === '-' ? -Infinity : Infinity;
  const value = Number(raw);
  return raw.trim() !== '' && !Number.isNaN(value) ? value : undefined;
}
