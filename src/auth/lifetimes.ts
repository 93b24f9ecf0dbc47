import { DAY, MINUTE } from '../kernel/clock.js';

/** Fixed by the port-operations document (§8). */
export const ACCESS_TOKEN_TTL_SECONDS = 3600;
export const REFRESH_TOKEN_TTL_MS = 30 * DAY;
export const AUTHORIZATION_CODE_TTL_MS = 10 * MINUTE;
/** An ID token lives as long as the access token it comes with. */
export const ID_TOKEN_TTL_SECONDS = ACCESS_TOKEN_TTL_SECONDS;
