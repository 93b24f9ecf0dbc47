import type { Config } from '../config.js';
import type { Database } from './orm.js';
import type { Clock } from '../kernel/clock.js';
import type { ReadModelVersions } from './versions.js';

/** What a CLI command gets: config from the environment, a migrated database, the clock. */
export interface CliContext {
  config: Config;
  db: Database;
  clock: Clock;
  /**
   * The versions of a gateway running in this process, whose read models a command's writes are
   * announced to (tests run commands beside a server). A CLI process has none: its writes reach
   * the gateways through the version rows.
   */
  versions?: ReadModelVersions;
  /** Reports a step of a long task on a terminal (stderr); silent with --json or when piped. */
  progress?: (message: string) => void;
}

export type CliOptionValue = string | boolean | string[] | undefined;

export interface CliCommand {
  /** One or two words: `keys create`, `clients rotate-secret`, `migrate`. */
  name: string;
  /** One line for `tidegate help`. */
  description: string;
  /** Usage after the name, e.g. `--account ID [--scopes "a b"] [--json]`. */
  usage: string;
  /** Each option with the line `--help` shows for it. */
  options?: Record<
    string,
    { type: 'string' | 'boolean'; description: string; multiple?: boolean; required?: boolean }
  >;
  /** Names of required positional arguments, e.g. ['ID'] or ['FILE']. */
  positionals?: string[];
  /** Commands that manage their own database (serve) say so. */
  noDatabase?: boolean;
  /** The command writes its own data to stdout (e.g. JSON Lines); its summary goes to stderr. */
  streamsOutput?: boolean;
  /**
   * Returns the one JSON object printed with --json, and the human text printed otherwise.
   * Throw AppError (or any Error) to fail: message on stderr, non-zero exit.
   */
  run(
    ctx: CliContext,
    args: { options: Record<string, CliOptionValue>; positionals: string[] },
  ): Promise<{ json: unknown; text: string }>;
}
