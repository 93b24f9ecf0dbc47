import type { CliCommand, CliOptionValue } from '../db/cli-command.js';
import { badInput } from '../kernel/errors.js';
import type { VesselType } from './entities.js';

// The command table loads nothing heavy: each `run` imports what it needs (src/cli.ts).

/** Shared reference data (vessels, ports) is admin-only over the API; operators add it here too. */

function text(options: Record<string, CliOptionValue>, name: string): string {
  const value = options[name];
  if (typeof value !== 'string') throw badInput(name, 'is required');
  return value;
}

function integer(options: Record<string, CliOptionValue>, name: string): number {
  const value = Number(text(options, name));
  if (!Number.isInteger(value)) throw badInput(name, `must be an integer (got '${String(options[name])}')`);
  return value;
}

export const portOpsCommands: CliCommand[] = [
  {
    name: 'vessels add',
    description: 'Add a vessel to the shared register (IMO check digit and flag validated)',
    usage: '--imo 9074729 --name NAME --flag SG --type TANKER --gt N --dwt N --built YYYY [--json]',
    options: {
      imo: { description: 'IMO number (7 digits with a valid check digit)', type: 'string', required: true },
      name: { description: 'Vessel name', type: 'string', required: true },
      flag: { description: 'Flag state, ISO 3166 alpha-2', type: 'string', required: true },
      type: { description: 'Vessel type, e.g. TANKER', type: 'string', required: true },
      gt: { description: 'Gross tonnage', type: 'string', required: true },
      dwt: { description: 'Deadweight tonnage', type: 'string', required: true },
      built: { description: 'Year built', type: 'string', required: true },
    },
    async run({ db, clock }, { options }) {
      const { createVessel } = await import('./reference-data.js');
      const vessel = await createVessel(
        { em: db.em(), clock },
        {
          imo: text(options, 'imo'),
          name: text(options, 'name'),
          flag: text(options, 'flag'),
          type: text(options, 'type') as VesselType,
          grossTonnage: integer(options, 'gt'),
          deadweight: integer(options, 'dwt'),
          yearBuilt: integer(options, 'built'),
        },
      );
      const { createdAt: _createdAt, ...json } = vessel;
      return { json, text: `Added vessel ${vessel.name} (IMO ${vessel.imo}), id ${vessel.id}` };
    },
  },
  {
    name: 'ports add',
    description: 'Add a port to the shared register (UN/LOCODE and IANA time zone validated)',
    usage: '--locode SGSIN --name NAME --time-zone Asia/Singapore [--json]',
    options: {
      locode: { description: 'UN/LOCODE, e.g. SGSIN', type: 'string', required: true },
      name: { description: 'Port name', type: 'string', required: true },
      'time-zone': { description: 'IANA time zone, e.g. Asia/Singapore', type: 'string', required: true },
    },
    async run({ db, clock }, { options }) {
      const { createPort } = await import('./reference-data.js');
      const port = await createPort(
        { em: db.em(), clock },
        {
          locode: text(options, 'locode'),
          name: text(options, 'name'),
          timeZone: text(options, 'time-zone'),
        },
      );
      const { createdAt: _createdAt, ...json } = port;
      return { json, text: `Added port ${port.locode} ${port.name} (${port.timeZone}), id ${port.id}` };
    },
  },
];
