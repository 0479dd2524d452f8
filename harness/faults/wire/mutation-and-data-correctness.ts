/** Wire faults made for the recipes of the Mutation And Data Correctness Invariants section (what each breaks is said in invariants.yaml). */
import { type FaultDefinition, wire } from './define.ts';

// biome-ignore lint/suspicious/noExplicitAny: a transform edits the parsed body member by member
type Body = any;

export const MUTATION_WIRE_FAULTS: readonly FaultDefinition[] = [
  // client queue
  wire('pull-tombstone-for-scope-exit', [
    { endpoint: 'pull', times: Number.POSITIVE_INFINITY, fault: { kind: 'rewrite', describe: 'give each rowless delete the row the same key carries elsewhere in the page, as an invented tombstone', transform: inventTombstones } },
  ]),
];

/**
 * A server that invents a tombstone where a row only left a scope: each
 * rowless delete of the page takes the row, checksum and version that an
 * upsert of the same table and key carries in another scope of the page. A
 * page with no such pair is left alone.
 */
function inventTombstones(json: Body): unknown {
  const changes: Body[] = Array.isArray(json?.changes) ? json.changes : [];
  let edited = false;
  for (const change of changes) {
    if (change.op !== 'delete' || change.row !== undefined) continue;
    const twin = changes.find((c) => c.op === 'upsert' && c.table === change.table && JSON.stringify(c.pk) === JSON.stringify(change.pk));
    if (twin === undefined) continue;
    change.row = twin.row;
    change.row_checksum = twin.row_checksum;
    change.server_version = twin.server_version;
    edited = true;
  }
  return edited ? json : undefined;
}
