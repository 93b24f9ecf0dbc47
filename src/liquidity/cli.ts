import { readFile } from 'node:fs/promises';
import { extname } from 'node:path';
import type { CliCommand, CliContext } from '../db/cli-command.js';
import { badInput } from '../kernel/errors.js';
import type { IngestFormat } from './ingest.js';
import type { WriterDeps } from './protocols.js';
import { noLiveEvents } from '../kernel/events.js';

// The command table loads nothing heavy: each `run` imports what it needs (src/cli.ts).

/** A command's writes are announced to the gateway of this process, if one runs here (CliContext). */
async function cliWriter(ctx: CliContext): Promise<WriterDeps> {
  const versions = ctx.versions ?? new (await import('../db/versions.js')).ReadModelVersions(ctx.db);
  return { em: ctx.db.em(), clock: ctx.clock, versions };
}

/** CSV or JSON, from --format or the file's extension. */
function formatOf(file: string, option: unknown): IngestFormat {
  const named = typeof option === 'string' ? option : extname(file).slice(1);
  const format = named.toUpperCase();
  if (format !== 'CSV' && format !== 'JSON')
    throw badInput('format', `must be csv or json (got '${named || 'no extension'}'); pass --format`);
  return format;
}

/**
 * `tidegate liquidity ingest FILE`: the same service as the admin mutation. The CLI has no live
 * bus; the staged events are durable rows that the webhook outbox of a running server delivers.
 */
export const liquidityCommands: CliCommand[] = [
  {
    name: 'liquidity ingest',
    description: 'Ingest daily protocol metrics from a CSV or JSON file (all rows or none)',
    usage: 'FILE [--format csv|json] [--replace] [--json]',
    positionals: ['FILE'],
    options: {
      format: { description: 'csv or json (default: from the file extension)', type: 'string' },
      replace: { description: 'Replace existing observations for the same dates', type: 'boolean' },
    },
    async run(ctx, { options, positionals }) {
      const file = positionals[0]!;
      const format = formatOf(file, options.format);
      ctx.progress?.(`reading ${file}`);
      const text = await readFile(file, 'utf8');
      const { ingestMetrics } = await import('./ingest.js');
      ctx.progress?.(`ingesting and scoring ${text.split('\n').length - 1} lines (one transaction)`);
      const result = await ingestMetrics({ ...(await cliWriter(ctx)), events: noLiveEvents }, text, format, {
        replace: options.replace === true,
      });
      const summary = {
        file,
        rows: result.rows,
        protocols: result.protocols,
        daysScored: result.daysScored,
        alerts: result.alerts,
        events: result.events.length,
      };
      const byType = new Map<string, number>();
      for (const e of result.events) byType.set(e.type, (byType.get(e.type) ?? 0) + 1);
      return {
        json: { ...summary, eventTypes: Object.fromEntries(byType) },
        text: `Ingested ${result.rows} rows for ${result.protocols} protocols: ${result.daysScored} daily scores, ${result.alerts} watchlist alerts, ${result.events.length} events${byType.size ? ` (${[...byType].map(([t, n]) => `${t} ${n}`).join(', ')})` : ''}`,
      };
    },
  },
  {
    // The CLI matches at most two words, so `import` is the first positional: `liquidity protocols import FILE`.
    name: 'liquidity protocols',
    description:
      'Import protocol profiles from a CSV or JSON file: creates new slugs, updates existing ones (all rows or none)',
    usage: 'import FILE [--format csv|json] [--json]',
    positionals: ['ACTION', 'FILE'],
    options: {
      format: { description: 'csv or json (default: from the file extension)', type: 'string' },
    },
    async run(ctx, { options, positionals }) {
      const [action, file] = positionals as [string, string];
      if (action !== 'import') throw badInput('ACTION', `must be import (got '${action}')`);
      const format = formatOf(file, options.format);
      ctx.progress?.(`importing protocol profiles from ${file}`);
      const { importProtocols } = await import('./protocols.js');
      const result = await importProtocols(await cliWriter(ctx), await readFile(file, 'utf8'), format);
      return {
        json: { file, ...result },
        text: `Imported ${file}: ${result.created} protocols created, ${result.updated} updated`,
      };
    },
  },
];
