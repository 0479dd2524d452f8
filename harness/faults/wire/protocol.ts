/** Wire faults made for the recipes of the Protocol Invariants section (what each breaks is said in invariants.yaml). */
import { type FaultDefinition, wire } from './define.ts';

export const PROTOCOL_WIRE_FAULTS: readonly FaultDefinition[] = [
  // SYNC-PROTO-006..011
  wire('pull-scope-updates-emptied', [
    { endpoint: 'pull', times: Number.POSITIVE_INFINITY, fault: { kind: 'rewrite', describe: 'empty scope_updates of each pull answer that reports a change, keeping its scope_set_version', transform: emptyScopeUpdates } },
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

