export {
  TidegateClient,
  type ClientOptions,
  type SubscriptionHandlers,
  type V1Helpers,
  type V1Name,
  type V1Params,
  type V1Result,
} from './client.js';
export { GraphQLResponseError, SessionExpiredError, TidegateError } from './errors.js';
export type { WebSocketConstructor, WebSocketLike } from './live.js';
export { MemoryStorage, OAuthSession, type OAuthOptions, type ServerMetadata } from './session.js';
export {
  BrowserTokenStore,
  MemoryTokenStore,
  type StorageLike,
  type TokenSet,
  type TokenStore,
} from './storage.js';
