/**
 * Wire faults the proxy injects, shared by every section: lost, refused,
 * delayed, duplicated, cut and corrupted answers, and rows edited under their
 * digest. Section-specific wire faults live beside this file, one module per
 * catalog section, and the registry gathers them all.
 */
import { type FaultDefinition, wire } from './define.ts';

/** Faults of the transport and of row digests that any section's recipes may use. */
export const COMMON_WIRE_FAULTS: readonly FaultDefinition[] = [
  wire('drop-push-response', [{ endpoint: 'push', fault: { kind: 'drop-response' } }]),
  wire('drop-pull-response', [{ endpoint: 'pull', fault: { kind: 'drop-response' } }]),
  wire('push-429', [{ endpoint: 'push', fault: { kind: 'status', status: 429, retryAfter: '1' } }]),
  wire('push-503', [{ endpoint: 'push', fault: { kind: 'status', status: 503, retryAfter: '1' } }]),
  wire('pull-503', [{ endpoint: 'pull', fault: { kind: 'status', status: 503, retryAfter: '1' } }]),
  wire('delay-push', [{ endpoint: 'push', times: Number.POSITIVE_INFINITY, fault: { kind: 'delay', ms: 2_000 } }]),
  wire('duplicate-push', [{ endpoint: 'push', fault: { kind: 'duplicate' } }]),
  wire('truncate-pull-response', [{ endpoint: 'pull', fault: { kind: 'truncate' } }]),
  wire('truncate-rebuild-response', [{ endpoint: 'rebuild', fault: { kind: 'truncate' } }]),
  wire('corrupt-pull-response', [{ endpoint: 'pull', fault: { kind: 'corrupt-byte' } }]),
  wire('corrupt-rebuild-response', [{ endpoint: 'rebuild', fault: { kind: 'corrupt-byte' } }]),
  wire('pull-row-edited-under-digest', [
    { endpoint: 'pull', times: Number.POSITIVE_INFINITY, fault: { kind: 'rewrite', describe: 'edit one text value of each pull change row, keeping its row_checksum', transform: editRowsUnderDigest } },
  ]),
];

/**
 * Appends a character to the first text value of each pull change row that
 * is not its key, leaving `row_checksum` as the server computed it; a body
 * with no such row is left alone.
 */
// biome-ignore lint/suspicious/noExplicitAny: a transform edits the parsed body member by member
function editRowsUnderDigest(json: any): unknown {
  let edited = false;
  for (const change of Array.isArray(json?.changes) ? json.changes : []) {
    const row = change?.row;
    if (row === null || typeof row !== 'object') continue;
    const keyFields = new Set(Object.keys(change.pk ?? {}));
    const name = Object.keys(row).find((k) => typeof row[k] === 'string' && !keyFields.has(k));
    if (name === undefined) continue;
    row[name] = `${row[name]}~`;
    edited = true;
  }
  return edited ? json : undefined;
}

