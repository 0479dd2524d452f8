/**
 * The connect answer's schema action against the protocol 3 action table
 * (which members each action requires and forbids). A violation is a schema
 * failure, decided before anything of the answer is applied: a client that
 * guessed the missing part (an empty or absent affected scope list read as
 * "rebuild nothing", a manifest ignored) would substitute its own decision for
 * the server's.
 */
import { ClientError } from '../errors.ts';
import type { HttpResponse } from './transport.ts';

const REQUIRED: Record<string, string[]> = { none: [], replace: ['schema_definition'], rebuild_local: ['schema_definition', 'affected_scopes'], unsupported: [] };
const FORBIDDEN: Record<string, string[]> = { none: ['schema_definition', 'affected_scopes'], replace: ['affected_scopes'], rebuild_local: [], unsupported: ['schema_definition', 'affected_scopes'] };

export function checkSchemaAction(res: HttpResponse): void {
  if (res.status !== 200) return;
  let body: Record<string, unknown>;
  try {
    body = JSON.parse(Buffer.from(res.body).toString('utf8')) as Record<string, unknown>;
  } catch {
    return; // Not JSON: the response reader reports it.
  }
  const action = (body?.schema as { action?: unknown } | undefined)?.action;
  if (typeof action !== 'string' || !(action in REQUIRED)) return; // An unknown action fails schema validation in the reader.
  const missing = (REQUIRED[action] ?? []).filter((m) => body[m] === undefined);
  const extra = (FORBIDDEN[action] ?? []).filter((m) => body[m] !== undefined);
  const affected = body.affected_scopes;
  const emptyList = action === 'rebuild_local' && Array.isArray(affected) && affected.length === 0;
  if (missing.length > 0 || extra.length > 0 || emptyList) {
    const what = [...missing.map((m) => `without ${m}`), ...extra.map((m) => `with ${m}`), ...(emptyList ? ['with an empty affected_scopes'] : [])].join(', ');
    throw new ClientError('schema', 'invalid_schema_action', `schema action ${action} ${what}`, false, 'none');
  }
}
