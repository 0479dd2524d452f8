/**
 * Limits on the text a request carries into the server, checked where the
 * value enters (the handlers call these right after structural validation,
 * authentication calls `textProblem` for the user id) and so before the
 * database sees it. PostgreSQL text cannot hold U+0000 (SQLSTATE 22021), and
 * a B-tree index entry holds about 2,700 octets (54000), so without these
 * checks such a value turned into a 500, and a sealed push batch holding one
 * could never be delivered. Every refusal here is `400 invalid_request`; a
 * length refusal carries the limit as `field`/`minimum`/`maximum`.
 *
 * The limits are the reference's own choice (the protocol only says
 * "nonempty"); docs/decisions.md records them. Each is far above what the
 * server itself issues: table and field IDs are derived from PostgreSQL
 * names (at most 63 octets), a default scope is `user:` and a user id. Lone
 * surrogates never get here: the body reader refuses them, and
 * authentication refuses a user id holding one.
 */
import type { ConnectRequest, PullRequest, PushRequest, RebuildRequest } from '../../../harness/wire/index.ts';
import { SyncError } from './errors.ts';
import { fault } from './faults.ts';

/** Longest accepted UTF-8 form, in octets, of each kind of text a request carries. */
export const TEXT_LIMITS = {
  /** The token's user claim. */
  userId: 256,
  clientId: 256,
  platform: 256,
  appVersion: 256,
  /** Room for the default scope `user:<user id>`. */
  scopeId: 512,
  tableId: 256,
  fieldId: 256,
  /** A string primary key value: with a table ID and a scope ID it still fits one index entry. */
  keyValue: 1024,
} as const;

/** What is wrong with `value` as stored text of at most `maxOctets`, or undefined when nothing is. */
export function textProblem(value: string, maxOctets: number): 'nul' | 'length' | undefined {
  if (value.includes('\u0000') && !fault('accept-nul')) return 'nul'; // fault: server:accept-nul
  if (Buffer.byteLength(value, 'utf8') > maxOctets && !fault('no-input-limits')) return 'length'; // fault: server:no-input-limits
  return undefined;
}

/** Refuses `value` (the request member `field`) when it cannot be stored as text of at most `maxOctets`. */
export function checkText(field: string, value: string, maxOctets: number): void {
  const problem = textProblem(value, maxOctets);
  if (problem === 'nul') throw new SyncError('invalid_request', `${field} contains U+0000`);
  if (problem === 'length') throw new SyncError('invalid_request', `${field} is longer than ${maxOctets} octets`, { field, minimum: 1, maximum: maxOctets });
}

function checkScopeIds(field: string, scopes: Iterable<string>): void {
  for (const scope of scopes) checkText(field, scope, TEXT_LIMITS.scopeId);
}

export function checkConnectText(request: ConnectRequest): void {
  checkText('client_id', request.client_id, TEXT_LIMITS.clientId);
  checkText('platform', request.platform, TEXT_LIMITS.platform);
  checkText('app_version', request.app_version, TEXT_LIMITS.appVersion);
  checkScopeIds('known_scopes', Object.keys(request.known_scopes));
  checkScopeIds('seed_receipts', Object.keys(request.seed_receipts ?? {}));
}

/** Identifiers only: column values are judged per mutation (a value the table refuses is `validation_failed`). */
export function checkPushText(request: PushRequest): void {
  checkText('client_id', request.client_id, TEXT_LIMITS.clientId);
  for (const m of request.mutations) {
    checkText('table', m.table, TEXT_LIMITS.tableId);
    for (const [field, value] of Object.entries(m.pk)) {
      checkText('pk', field, TEXT_LIMITS.fieldId);
      if (typeof value === 'string') checkText('pk', value, TEXT_LIMITS.keyValue);
    }
    if ('columns' in m) for (const field of Object.keys(m.columns)) checkText('columns', field, TEXT_LIMITS.fieldId);
  }
}

export function checkPullText(request: PullRequest): void {
  checkText('client_id', request.client_id, TEXT_LIMITS.clientId);
  checkScopeIds('scopes', Object.keys(request.scopes));
}

export function checkRebuildText(request: RebuildRequest): void {
  checkText('client_id', request.client_id, TEXT_LIMITS.clientId);
  checkText('scope', request.scope, TEXT_LIMITS.scopeId);
}
