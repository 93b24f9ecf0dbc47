import type { MigrationObject } from '@mikro-orm/core';
import { Migration20261122000100Foundation } from './Migration20261122000100Foundation.js';
import { Migration20261122000300Auth } from './Migration20261122000300Auth.js';
import { Migration20261122000600Events } from './Migration20261122000600Events.js';
import { Migration20261122000700PortOps } from './Migration20261122000700PortOps.js';
import { Migration20261122000800Liquidity } from './Migration20261122000800Liquidity.js';
import { Migration20261123000100KeyRotation } from './Migration20261123000100KeyRotation.js';
import { Migration20261123000300AuthHardening } from './Migration20261123000300AuthHardening.js';
import { Migration20261123000600WebhookHardening } from './Migration20261123000600WebhookHardening.js';
import { Migration20261123000800LiquidityRevisions } from './Migration20261123000800LiquidityRevisions.js';
import { Migration20261123000700PortOpsIntegrity } from './Migration20261123000700PortOpsIntegrity.js';
import { Migration20261124000100SandboxAccounts } from './Migration20261124000100SandboxAccounts.js';
import { Migration20261124000300ReadModels } from './Migration20261124000300ReadModels.js';
import { Migration20261124000400PortOpsListIndexes } from './Migration20261124000400PortOpsListIndexes.js';
import { Migration20261125000100EventTraceContext } from './Migration20261125000100EventTraceContext.js';
import { Migration20261125000200PortOpsOrderIndexes } from './Migration20261125000200PortOpsOrderIndexes.js';
import { Migration20261125000300PortOpsVersions } from './Migration20261125000300PortOpsVersions.js';
import { Migration20261128000500OpenIdConnect } from './Migration20261128000500OpenIdConnect.js';
import { Migration20261128000700ConsoleRequestLog } from './Migration20261128000700ConsoleRequestLog.js';
import { Migration20261128000800VersionNotices } from './Migration20261128000800VersionNotices.js';
import { Migration20261128000900StatementVersionTriggers } from './Migration20261128000900StatementVersionTriggers.js';
import { Migration20261201000100PortOpsChanges } from './Migration20261201000100PortOpsChanges.js';
import { Migration20261201000200VersionSequence } from './Migration20261201000200VersionSequence.js';
import { Migration20261201000300OneMovePerTransaction } from './Migration20261201000300OneMovePerTransaction.js';
import { Migration20261204000100PruneChangeLog } from './Migration20261204000100PruneChangeLog.js';
import { Migration20261204000200DropPrefixIndexes } from './Migration20261204000200DropPrefixIndexes.js';
import { Migration20261204000300AuditRequestIdIndex } from './Migration20261204000300AuditRequestIdIndex.js';
import { Migration20261206000100SqlitePruneChangeLog } from './Migration20261206000100SqlitePruneChangeLog.js';

/**
 * Every migration, in order. Migrations are checked in and never edited once released;
 * a change to the schema is a new file here.
 */
export const MIGRATIONS: MigrationObject[] = [
  { name: 'Migration20261122000100Foundation', class: Migration20261122000100Foundation },
  { name: 'Migration20261122000300Auth', class: Migration20261122000300Auth },
  { name: 'Migration20261122000600Events', class: Migration20261122000600Events },
  { name: 'Migration20261122000700PortOps', class: Migration20261122000700PortOps },
  { name: 'Migration20261122000800Liquidity', class: Migration20261122000800Liquidity },
  { name: 'Migration20261123000100KeyRotation', class: Migration20261123000100KeyRotation },
  { name: 'Migration20261123000300AuthHardening', class: Migration20261123000300AuthHardening },
  { name: 'Migration20261123000600WebhookHardening', class: Migration20261123000600WebhookHardening },
  { name: 'Migration20261123000800LiquidityRevisions', class: Migration20261123000800LiquidityRevisions },
  { name: 'Migration20261123000700PortOpsIntegrity', class: Migration20261123000700PortOpsIntegrity },
  { name: 'Migration20261124000100SandboxAccounts', class: Migration20261124000100SandboxAccounts },
  { name: 'Migration20261124000300ReadModels', class: Migration20261124000300ReadModels },
  { name: 'Migration20261124000400PortOpsListIndexes', class: Migration20261124000400PortOpsListIndexes },
  { name: 'Migration20261125000100EventTraceContext', class: Migration20261125000100EventTraceContext },
  { name: 'Migration20261125000200PortOpsOrderIndexes', class: Migration20261125000200PortOpsOrderIndexes },
  { name: 'Migration20261125000300PortOpsVersions', class: Migration20261125000300PortOpsVersions },
  { name: 'Migration20261128000500OpenIdConnect', class: Migration20261128000500OpenIdConnect },
  { name: 'Migration20261128000700ConsoleRequestLog', class: Migration20261128000700ConsoleRequestLog },
  { name: 'Migration20261128000800VersionNotices', class: Migration20261128000800VersionNotices },
  {
    name: 'Migration20261128000900StatementVersionTriggers',
    class: Migration20261128000900StatementVersionTriggers,
  },
  { name: 'Migration20261201000100PortOpsChanges', class: Migration20261201000100PortOpsChanges },
  { name: 'Migration20261201000200VersionSequence', class: Migration20261201000200VersionSequence },
  {
    name: 'Migration20261201000300OneMovePerTransaction',
    class: Migration20261201000300OneMovePerTransaction,
  },
  { name: 'Migration20261204000100PruneChangeLog', class: Migration20261204000100PruneChangeLog },
  { name: 'Migration20261204000200DropPrefixIndexes', class: Migration20261204000200DropPrefixIndexes },
  { name: 'Migration20261204000300AuditRequestIdIndex', class: Migration20261204000300AuditRequestIdIndex },
  { name: 'Migration20261206000100SqlitePruneChangeLog', class: Migration20261206000100SqlitePruneChangeLog },
];
