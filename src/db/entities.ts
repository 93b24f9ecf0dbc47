import { accountEntities } from '../accounts/entities.js';
import { auditEntities } from '../audit/entities.js';
import { authEntities } from '../auth/entities.js';
import { eventEntities } from '../events/entities.js';
import { liquidityEntities } from '../liquidity/entities.js';
import { portOpsEntities } from '../port-ops/entities.js';

/** Every entity of every domain; the ORM discovers exactly these. */
export const ALL_ENTITIES = [
  ...accountEntities,
  ...auditEntities,
  ...authEntities,
  ...portOpsEntities,
  ...liquidityEntities,
  ...eventEntities,
];
