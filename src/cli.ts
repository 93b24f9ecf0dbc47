// Start-up cost: this file and the command tables in src/<domain>/cli.ts import nothing heavy (no
// ORM, no GraphQL, no services), so --version, --help and usage errors answer at once; a command's
// `run` and the database below are loaded with import() only when a command runs.
// test/cli/startup.e2e.test.ts fails if --help or --version loads them again.
import { parseArgs } from 'node:util';
import { accountCommands } from './accounts/cli.js';
import { auditCommands } from './audit/cli.js';
import { authCommands } from './auth/cli.js';
import { eventsCommands } from './events/cli.js';
import { liquidityCommands } from './liquidity/cli.js';
import { portOpsCommands } from './port-ops/cli.js';
import { systemClock } from './kernel/clock.js';
import type { CliCommand, CliOptionValue } from './db/cli-command.js';
import { packageVersion } from './kernel/package-root.js';

const coreCommands: CliCommand[] = [
  {
    name: 'serve',
    description: 'Start the gateway (same as npm start), or one federation subgraph of it',
    usage: '[--subgraph accounts|port-ops|liquidity]',
    options: {
      subgraph: {
        type: 'string',
        description: 'Serve only this Apollo Federation 2 subgraph on /graphql (same as SUBGRAPH=<name>)',
      },
    },
    noDatabase: true,
    async run(_ctx, { options }) {
      const { serve } = await import('./main.js');
      const subgraph = options.subgraph;
      await serve(typeof subgraph === 'string' ? { ...process.env, SUBGRAPH: subgraph } : process.env);
      return { json: null, text: '' };
    },
  },
  {
    name: 'migrate',
    description: 'Apply pending database migrations',
    usage: '',
    async run({ db }) {
      const applied = await db.migrate();
      return {
        json: { applied },
        text: applied.length ? `Applied ${applied.join(', ')}` : 'Database is up to date',
      };
    },
  },
  {
    name: 'seed',
    description: 'Create the demo dataset on an empty database and print its credentials once',
    usage: '--demo',
    options: {
      demo: { description: 'Required: confirms the demo dataset is wanted', type: 'boolean', required: true },
    },
    async run({ db, clock, config, progress }) {
      const { isEmpty, seedDemo, formatDemoCredentials } = await import('./seed.js');
      if (!(await isEmpty(db.em())))
        throw new Error('The database already has accounts; demo data is only seeded into an empty database');
      progress?.('seeding the demo dataset (accounts, keys, port operations, liquidity history)');
      const creds = await seedDemo(db, { clock, config });
      return {
        json: {
          accounts: creds.accounts.map((a) => ({ plan: a.plan, account_id: a.accountId, api_key: a.apiKey })),
          admin: {
            email: creds.admin.email,
            password: creds.admin.password,
            account_id: creds.admin.accountId,
          },
        },
        text: formatDemoCredentials(creds, config.publicUrl),
      };
    },
  },
];

/** Every command, core first; domains contribute theirs from `src/<domain>/cli.ts`. */
export const COMMANDS: CliCommand[] = [
  ...coreCommands,
  ...accountCommands,
  ...auditCommands,
  ...authCommands,
  ...portOpsCommands,
  ...liquidityCommands,
  ...eventsCommands,
];

function usage(commands: CliCommand[] = COMMANDS): string {
  const width = Math.max(...commands.map((c) => c.name.length));
  return [
    'Usage: tidegate <command> [options] [--json]',
    '',
    ...commands.map((c) => `  ${c.name.padEnd(width)}  ${c.usage ? c.usage + '  ' : ''}— ${c.description}`),
    '',
    'Every command honours DATABASE_URL. --json prints exactly one JSON object on stdout.',
    'tidegate <command> --help describes a command and its options; tidegate --version prints the version.',
  ].join('\n');
}

/** `tidegate keys create --help`: what it does, its arguments and every option with its meaning. */
function commandHelp(command: CliCommand): string {
  const all: NonNullable<CliCommand['options']> = {
    ...command.options,
    json: { type: 'boolean', description: 'Print exactly one JSON object on stdout (no progress)' },
  };
  const options = Object.entries(all).map(([name, spec]) => {
    const flag = `--${name}${spec.type === 'string' ? ' VALUE' : ''}`;
    const notes = [spec.required ? 'required' : '', spec.multiple ? 'repeatable' : ''].filter(Boolean);
    return [flag, `${spec.description}${notes.length ? ` (${notes.join(', ')})` : ''}`] as const;
  });
  const width = Math.max(...options.map(([flag]) => flag.length));
  return [
    `Usage: tidegate ${command.name}${command.usage ? ` ${command.usage}` : ''}`,
    '',
    command.description,
    ...(command.positionals?.length ? ['', `Arguments: ${command.positionals.join(' ')}`] : []),
    '',
    'Options:',
    ...options.map(([flag, text]) => `  ${flag.padEnd(width)}  ${text}`),
    `  ${'--help'.padEnd(width)}  Show this help`,
  ].join('\n');
}

function version(): string {
  return `tidegate ${packageVersion()}`;
}

const wantsHelp = (args: string[]) => args.includes('--help') || args.includes('-h');

function findCommand(argv: string[]): { command: CliCommand; rest: string[] } | null {
  for (const words of [2, 1]) {
    const name = argv.slice(0, words).join(' ');
    const command = COMMANDS.find((c) => c.name === name);
    if (command) return { command, rest: argv.slice(words) };
  }
  return null;
}

/** Runs one command; returns the exit code. Errors become a message on stderr and exit code 1. */
export async function runCli(argv: string[]): Promise<number> {
  try {
    return await dispatch(argv);
  } catch (e) {
    // AppError and ConfigError are Errors: their message is the one to show.
    const message = e instanceof Error ? e.message : String(e);
    process.stderr.write(`tidegate: ${message}\n`);
    return 1;
  }
}

async function dispatch(argv: string[]): Promise<number> {
  if (argv.length === 0) {
    // No command is a usage error: the usage goes where errors go.
    process.stderr.write(usage() + '\n');
    return 2;
  }
  if (argv[0] === '--version' || argv[0] === '-v' || argv[0] === 'version') {
    process.stdout.write(version() + '\n');
    return 0;
  }
  if (argv[0] === 'help' || argv[0] === '--help' || argv[0] === '-h') {
    const named = argv.slice(1).filter((a) => !a.startsWith('-'));
    const found = named.length > 0 ? findCommand(named) : null;
    process.stdout.write((found ? commandHelp(found.command) : usage()) + '\n');
    return 0;
  }
  const found = findCommand(argv);
  if (found && wantsHelp(found.rest)) {
    process.stdout.write(commandHelp(found.command) + '\n');
    return 0;
  }
  // `tidegate keys --help`: the commands of that group.
  const group = COMMANDS.filter((c) => c.name.split(' ')[0] === argv[0]);
  if (!found && wantsHelp(argv) && group.length > 0) {
    process.stdout.write(usage(group) + '\n');
    return 0;
  }
  if (!found) {
    process.stderr.write(
      `tidegate: unknown command '${argv
        .filter((a) => !a.startsWith('-'))
        .slice(0, 2)
        .join(' ')}'\n\n${usage()}\n`,
    );
    return 2;
  }
  const { command, rest } = found;
  let parsed: { values: Record<string, CliOptionValue>; positionals: string[] };
  try {
    parsed = parseArgs({
      args: rest,
      options: { ...(command.options ?? {}), json: { type: 'boolean' } },
      allowPositionals: true,
      strict: true,
    }) as typeof parsed;
  } catch (e) {
    process.stderr.write(
      `tidegate ${command.name}: ${(e as Error).message}\nUsage: tidegate ${command.name} ${command.usage}\n`,
    );
    return 2;
  }
  const missing = Object.entries(command.options ?? {})
    .filter(([name, spec]) => spec.required && parsed.values[name] === undefined)
    .map(([name]) => `--${name}`);
  const wanted = command.positionals ?? [];
  if (missing.length > 0 || parsed.positionals.length !== wanted.length) {
    const problems = [
      ...(missing.length ? [`missing ${missing.join(', ')}`] : []),
      ...(parsed.positionals.length !== wanted.length
        ? [`expected ${wanted.length ? wanted.join(' ') : 'no arguments'}`]
        : []),
    ];
    process.stderr.write(
      `tidegate ${command.name}: ${problems.join('; ')}\nUsage: tidegate ${command.name} ${command.usage}\n`,
    );
    return 2;
  }

  const json = parsed.values.json === true;
  const progress =
    !json && process.stderr.isTTY ? (message: string) => process.stderr.write(`… ${message}\n`) : undefined;
  // Loaded only now that a command runs: decorator metadata, then config and the ORM.
  await import('reflect-metadata');
  const { loadConfig } = await import('./config.js');
  const config = loadConfig();
  if (command.noDatabase) {
    await command.run(
      { config, db: undefined as never, clock: systemClock },
      { options: parsed.values, positionals: parsed.positionals },
    );
    return 0;
  }
  const { databaseOptionsOf, openAppDatabase } = await import('./database.js');
  const db = await openAppDatabase(config.databaseUrl, databaseOptionsOf(config));
  try {
    if (command.name !== 'migrate') await db.migrate();
    const result = await command.run(
      { config, db, clock: systemClock, progress },
      { options: parsed.values, positionals: parsed.positionals },
    );
    if (command.streamsOutput) process.stderr.write(result.text + '\n');
    else process.stdout.write((json ? JSON.stringify(result.json) : result.text) + '\n');
    return 0;
  } finally {
    await db.close();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  process.exitCode = await runCli(process.argv.slice(2));
}
