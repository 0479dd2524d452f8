/**
 * Connect: present identity, schema and known scopes; install the returned
 * generation, assignment delta and cursors together; run the schema action
 * through the migration journal.
 */
import { schemaManifestHashUnchecked } from '../../../harness/codec/index.ts';
import { isSemVer } from '../../../harness/codec/semver.ts';
import type { ConnectResponse } from '../../../harness/wire/generated.ts';
import { addScope, markRebuild, removeScope, scopes } from '../apply/scopes.ts';
import type { Ctx } from '../context.ts';
import { ClientError } from '../errors.ts';
import { durably } from '../events.ts';
import { fault } from '../faults.ts';
import { migrate } from '../journal/migration.ts';
import { verifyManifest } from '../local/manifest.ts';
import { getMeta, serverApply, setMeta } from '../local/metadata.ts';
import { readSeedReceipts, seedReceiptsMember, settleSeed } from '../local/seed.ts';
import { clearBackoff } from './backoff.ts';
import { readResponse } from './response.ts';
import { checkSchemaAction } from './schema-action.ts';

export function connectRequest(ctx: Ctx): Buffer {
  const generation = getMeta(ctx.db, 'client_generation');
  const known: Record<string, { cursor: string | null }> = {};
  for (const s of scopes(ctx)) known[s.scope_id] = { cursor: s.rebuild_required === 1 ? null : s.cursor };
  const body: Record<string, unknown> = { client_id: ctx.config.clientId };
  if (generation !== undefined) body.client_generation = Number(generation);
  body.platform = ctx.config.platform;
  body.app_version = ctx.config.appVersion;
  body.protocol_version = 3;
  body.schema = ctx.schema === undefined ? { version: 0, hash: '' } : { version: ctx.schema.version, hash: ctx.schema.hash };
  // Only a continuing client with a real schema may ask for the explicit reset.
  if (getMeta(ctx.db, 'schema_reset') === '1' && generation !== undefined && ctx.schema !== undefined) body.schema_reset = true;
  body.scope_set_version = Number(getMeta(ctx.db, 'scope_set_version') ?? 0);
  body.known_scopes = known;
  const receipts = seedReceiptsMember(ctx);
  if (receipts !== undefined) body.seed_receipts = receipts;
  return Buffer.from(JSON.stringify(body), 'utf8');
}

/** Returns whether a schema action ran (the caller passes through `schema_applying`). */
export async function connect(ctx: Ctx): Promise<{ schemaApplied: boolean; response: ConnectResponse }> {
  // A version the server cannot rank would defeat its minimum-version gate: never announce one.
  const announceable = isSemVer(ctx.config.appVersion) || fault('announce-malformed-app-version'); // fault: client:announce-malformed-app-version
  if (!announceable) throw new ClientError('connecting', 'invalid_app_version', `the application version ${JSON.stringify(ctx.config.appVersion)} is not a Semantic Versioning 2.0.0 version`, false, 'none');
  if (fault('seed-receipt-as-cursor')) for (const r of readSeedReceipts(ctx.db)) addScope(ctx, r.scopeId, r.receipt); // fault: client:seed-receipt-as-cursor
  const res = await ctx.transport('/sync/connect', connectRequest(ctx));
  if (fault('fold-type-case') && res.status === 200) res.body = Buffer.from(JSON.stringify(((b) => { const m = b.schema_definition; if (m?.tables === undefined || schemaManifestHashUnchecked(m).hash !== m.schema_hash) return b; for (const f of m.tables.flatMap((t: { fields: unknown[] }) => t.fields)) f.type = String(f.type).toLowerCase(); b.schema.hash = m.schema_hash = schemaManifestHashUnchecked(m).hash; return b; })(JSON.parse(Buffer.from(res.body).toString('utf8'))))); // fault: client:fold-type-case
  checkSchemaAction(res);
  const response = readResponse('connect-response', res, 'connecting', ctx.clock.now());
  const schema = response.schema;
  if (schema.action === 'unsupported' && !fault('bound003-continue-unsupported-schema')) { // fault: client:bound003-continue-unsupported-schema
    throw new ClientError('schema', 'schema_unsupported', `the server cannot continue this schema (${schema.reason})`, false, 'schema_reset', { reason: schema.reason });
  }
  let schemaApplied = false;
  if (schema.action === 'replace' || schema.action === 'rebuild_local') {
    if (response.schema_definition === undefined) throw new ClientError('connecting', 'invalid_response', `${schema.action} without a manifest`, false, 'retry');
    const manifest = verifyManifest(response.schema_definition);
    if (manifest.schema_version !== schema.version || manifest.schema_hash !== schema.hash) {
      throw new ClientError('connecting', 'invalid_response', 'manifest differs from the schema descriptor', false, 'retry');
    }
    // The replacement tokens are bound to the new schema: they are installed in the same unit that activates it, so a crash never leaves one without the other.
    const replacements = Object.fromEntries(Object.entries(response.scope_cursor_updates).filter((entry): entry is [string, string] => typeof entry[1] === 'string'));
    if (fault('schema003-replacements-after-activation')) for (const scope of Object.keys(replacements)) delete replacements[scope]; // fault: client:schema003-replacements-after-activation
    if (ctx.schema?.hash !== manifest.schema_hash) migrate(ctx, manifest, { action: schema.action, affectedScopes: response.affected_scopes ?? [], cursorUpdates: replacements });
    schemaApplied = true;
  } else if (ctx.schema === undefined || ctx.schema.version !== schema.version || ctx.schema.hash !== schema.hash) {
    throw new ClientError('connecting', 'invalid_response', 'schema action none for a schema this client does not hold', false, 'retry');
  }
  // The server's list is authoritative: exactly these scopes rebuild, never a local choice.
  const rebuild = schemaApplied && fault('rebuild-every-scope') ? scopes(ctx).map((s) => s.scope_id) : (response.affected_scopes ?? []); // fault: client:rebuild-every-scope
  durably(ctx, () => serverApply(ctx.db, () => {
    setMeta(ctx.db, 'client_generation', response.client_generation);
    for (const r of response.scopes.remove) removeScope(ctx, r);
    for (const a of response.scopes.add) addScope(ctx, a.id, a.cursor);
    for (const [s, cursor] of Object.entries(response.scope_cursor_updates)) {
      if ((cursor === null || cursor === undefined) && fault('ignore-null-cursor-update')) continue; // fault: client:ignore-null-cursor-update
      if (cursor === null || cursor === undefined) markRebuild(ctx, s);
      else ctx.db.prepare('UPDATE _synchro_scopes SET cursor = ?, rebuild_required = 0 WHERE scope_id = ?').run(cursor, s);
    }
    for (const s of rebuild) markRebuild(ctx, s);
    settleSeed(ctx, response);
    setMeta(ctx.db, 'scope_set_version', response.scope_set_version);
    setMeta(ctx.db, 'needs_connect', null);
    setMeta(ctx.db, 'schema_reset', null);
    clearBackoff(ctx);
  }));
  return { schemaApplied, response };
}
