/**
 * @module Authentication and authorization of the hub: API tokens (users, CLI), join tokens
 * (enrollment), edge credentials (sync connections), and the role matrix. Formats and the trust
 * model are described in docs/security.md.
 */
export { parseToken, type ParsedToken, type TokenKind } from '../../sync/pinned-ca.js';
export {
  decommissionedAt,
  edgeCredentialVerifier,
  edgeSealKey,
  issueEdgeCredential,
  revokeEdgeCredential,
  verifyEdgeCredential,
} from './edge-credentials.js';
export {
  consumeJoinToken,
  createJoinToken,
  enrollLabels,
  joinTokenExpiry,
  listJoinTokens,
  revokeJoinToken,
  type CreateJoinTokenOptions,
  type JoinGrant,
  type JoinTokenInfo,
} from './join-tokens.js';
export {
  ALL_PROJECTS,
  authorize,
  can,
  canGrant,
  isRole,
  ROLES,
  type Action,
  type Principal,
  type Role,
} from './roles.js';
export {
  MISSING_TOKEN,
  principalFromHeader,
  principalOf,
  type ApiPrincipal,
  type VerifyApiToken,
} from './principal.js';
export { createHubAuth } from './hub-auth.js';
export { TokenStreams, type CloseStream } from './token-streams.js';
export {
  apiTokenExpiry,
  createApiToken,
  ensureAdminToken,
  listApiTokens,
  liveApiTokens,
  revokeApiToken,
  rotateAdminToken,
  verifyApiToken,
  type ApiTokenInfo,
  type CreateApiTokenOptions,
} from './tokens.js';
