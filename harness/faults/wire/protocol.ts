/** Wire faults made for the recipes of the Protocol Invariants section (what each breaks is said in invariants.yaml). */
import { type FaultDefinition, wire } from './define.ts';

export const PROTOCOL_WIRE_FAULTS: readonly FaultDefinition[] = [
  // SYNC-PROTO-006..011
  wire('pull-scope-updates-emptied', [
    { endpoint: 'pull', times: Number.POSITIVE_INFINITY, fault: { kind: 'rewrite', describe: 'empty scope_updates of each pull answer that reports a change, keeping its scope_set_version', transform: emptyScopeUpdates } },
  ]),
  wire('pull-tombstone-as-update', [
    { endpoint: 'pull', times: Number.POSITIVE_INFINITY, fault: { kind: 'rewrite', describe: 'report each tombstone (a delete carrying its row) of a pull answer with op "update"', transform: tombstonesAsUpdate } },
  ]),
];

/**
 * Empties `scope_updates` of a pull answer whose add or remove list is not
 * empty, so the version step arrives without the change it stands for; a body
 * that reports no change is left alone.
 */
// biome-ignore lint/suspicious/noExplicitAny: a transform edits the parsed body member by member
function emptyScopeUpdates(json: any): unknown {
  const updates = json?.scope_updates;
  if ((updates?.add?.length ?? 0) === 0 && (updates?.remove?.length ?? 0) === 0) return undefined;
  json.scope_updates = { add: [], remove: [] };
  return json;
}

/**
 * Gives every pull change that deletes a row but still carries it (a soft
 * delete's tombstone) the op "update", the verb of the source statement that
 * made it; a body without a tombstone is left alone.
 */
// biome-ignore lint/suspicious/noExplicitAny: a transform edits the parsed body member by member
function tombstonesAsUpdate(json: any): unknown {
  const tombstones = (Array.isArray(json?.changes) ? json.changes : []).filter((change: { op?: unknown; row?: unknown }) => change?.op === 'delete' && change.row !== undefined && change.row !== null);
  for (const change of tombstones) change.op = 'update';
  return tombstones.length > 0 ? json : undefined;
}
