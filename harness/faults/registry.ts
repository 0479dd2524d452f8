/**
 * The named faults a sensitivity run can apply.
 *
 * A fault is either a wire fault the proxy injects (`wire:<name>`, defined
 * here by the proxy rules it installs) or a fault switch in the reference
 * implementation (`server:<name>`, `client:<name>`): a single line there
 * marked `// fault: server:<name>`, enabled by the environment variable
 * `SYNCHRO_FAULTS=<name>[,<name>]` of that process. invariants.yaml lists, per
 * invariant, the faults that violate it; the sensitivity run applies each one
 * and requires the invariant's feature to fail.
 *
 * Switches are registered by reading the marked lines in reference/, so the
 * registry always matches the code. A record naming a fault that is not
 * registered is an input error, so a typo cannot turn into a vacuous
 * "detected".
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FaultRule } from '../proxy/faults.ts';

export type FaultKind = 'wire' | 'server' | 'client';

export interface FaultDefinition {
  name: string;
  kind: FaultKind;
  description: string;
  /** Wire faults: the proxy rules that make the fault. */
  rules?: FaultRule[];
}

const wire = (name: string, description: string, rules: FaultRule[]): FaultDefinition => ({ name: `wire:${name}`, kind: 'wire', description, rules });

/** Faults the proxy injects. */
export const WIRE_FAULTS: readonly FaultDefinition[] = [
  wire('drop-push-response', 'the server commits the first push but its response never reaches the client', [{ endpoint: 'push', fault: { kind: 'drop-response' } }]),
  wire('drop-pull-response', 'the first pull response is lost after the server answered', [{ endpoint: 'pull', fault: { kind: 'drop-response' } }]),
  wire('push-429', 'the first push is answered 429 retry_later with Retry-After: 1 without reaching the server', [{ endpoint: 'push', fault: { kind: 'status', status: 429, retryAfter: '1' } }]),
  wire('push-503', 'the first push is answered 503 temporary_unavailable with Retry-After: 1 without reaching the server', [{ endpoint: 'push', fault: { kind: 'status', status: 503, retryAfter: '1' } }]),
  wire('pull-503', 'the first pull is answered 503 temporary_unavailable with Retry-After: 1 without reaching the server', [{ endpoint: 'pull', fault: { kind: 'status', status: 503, retryAfter: '1' } }]),
  wire('delay-push', 'every push request is held two seconds before it reaches the server', [{ endpoint: 'push', times: Number.POSITIVE_INFINITY, fault: { kind: 'delay', ms: 2_000 } }]),
  wire('duplicate-push', 'the first push request is delivered to the server twice', [{ endpoint: 'push', fault: { kind: 'duplicate' } }]),
  wire('truncate-pull-response', 'the first pull response is cut off halfway through its body', [{ endpoint: 'pull', fault: { kind: 'truncate' } }]),
  wire('truncate-rebuild-response', 'the first rebuild response is cut off halfway through its body', [{ endpoint: 'rebuild', fault: { kind: 'truncate' } }]),
  wire('corrupt-pull-response', 'one byte in the middle of the first pull response body is altered', [{ endpoint: 'pull', fault: { kind: 'corrupt-byte' } }]),
  wire('corrupt-rebuild-response', 'one byte in the middle of the first rebuild response body is altered', [{ endpoint: 'rebuild', fault: { kind: 'corrupt-byte' } }]),
  wire('pull-row-edited-under-digest', 'every pull change with a row has one text value edited after its row_checksum was computed, as a server whose digest does not cover the row it sends', [
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

/**
 * What each known switch breaks, for the report. A switch marked in the code
 * but missing here is still registered (with its location as description), so
 * the registry can never fall behind the code.
 */
const SWITCH_DESCRIPTIONS: Readonly<Record<string, string>> = {
  'server:scope-version-double-step': 'a changed assigned scope set advances scope_set_version by two instead of exactly one',
  'server:ignore-base-version': 'push applies an update or delete whose base_version is stale instead of answering a version_conflict',
  'server:replay-fresh-time': 'a replayed push answers with a fresh server_time instead of the stored response bytes',
  'server:no-epoch-advance': 'an accepted push does not advance the accepted-write epoch',
  'server:offset-datetime': 'datetime values leave the server as +00:00 offsets instead of the microsecond Z form',
  'server:accept-loose-numbers': 'request bodies with noncanonical number spellings (1e3, 10.0) are read as integers instead of refused',
  'client:accept-loose-numbers': 'the client reads a noncanonical number such as protocol_version 3.0 instead of refusing the response',
  'server:accept-forged-cursor': 'a cursor that fails authentication or binding is treated as stale (200 and a rebuild) instead of refused with 400',
  'client:trim-cursor': 'the client trims white space off a cursor before storing it instead of keeping it byte for byte',
  'client:keep-greater-server-version': 'the client keeps whichever server version sorts higher instead of the one the server sent last',
  'server:repair-base-version': 'the server repairs a base_version outside the portable shape instead of refusing the request',
  'server:accept-unassigned-scopes': 'a pull naming a scope the client was never assigned is served instead of refused',
  'server:ignore-shared-scopes': 'registered shared scopes are left out of the assigned set',
  'server:skip-pull-reconciliation': 'pull answers from the assignment stored at the last connect instead of re-evaluating it',
  'client:skip-empty-pull': 'a client holding no scope skips the pull instead of pulling with an empty scope set',
  'server:assignment-failure-as-empty': 'a failing assignment function contributes no scope instead of failing the request with sync_integrity_failure',
  'server:scope-version-bump-unchanged': 'scope_set_version advances on every connect and pull, even when the set is unchanged',
  'server:class4-replace': 'a lineage with a Class 4 step is answered replace instead of unsupported',
  'client:rebuild-every-scope': 'after replace or rebuild_local the client rebuilds every scope instead of exactly the affected ones',
  'server:update-missing-inserts': 'an update of a missing row is applied as an insert instead of answered row_not_found',
  'server:decimal-trailing-zeros': 'decimal values leave the server in PostgreSQL\'s text form (1.2300) instead of canonical decimal text',
  'client:skip-row-checksum': 'the client takes the server\'s row digest without recomputing it',
  'server:xor-scope-digest': 'scope digests are the XOR of the row digests instead of the streamed SHA-256',
  'client:retry-drops-cursors': 'recording a backoff also clears every cursor and marks every scope for rebuild',
  'client:retry-non-retryable': 'a non-retryable failure is treated as a retryable 503 and retried',
  'client:no-auto-rebuild': 'the sync cycle never starts a rebuild the server required',
  'client:stopped-can-pull': 'the state map lets stopped move straight to pulling',
  'server:semver-ignore-prerelease': 'the minimum client version gate compares only MAJOR.MINOR.PATCH and ignores prerelease identifiers',
  'client:announce-malformed-app-version': 'the client announces a malformed app version instead of refusing to connect',
  'server:ignore-capture-pending': 'pull and rebuild ignore a pending capture of the client\'s accepted write and serve a page without it instead of 503 capture_pending',
  'server:seed-digest-wrong-schema': 'portable seed row and scope digests are computed under a hash other than the export\'s schema hash',
  'server:seed-receipt-ignores-current-state': 'connect turns seed receipts into cursors without checking that schema, stream, registry and scope generations are still those of the export',
  'server:scope-function-contract-unchecked': 'registration takes membership and impact functions of any language, volatility and security mode, whatever built-ins they call',
  'server:invalid-scope-as-empty': 'capture drops a NULL, empty or blank membership result instead of failing the evaluation, so a row can quietly lose every scope',
  'server:cursor-ignores-membership-generation': 'pull accepts an incremental cursor minted under an older membership generation of its scope and serves changes from it instead of sending the scope to rebuild',
  'server:impact-new-image-only': 'impact functions receive only the new image of a changed dependency row (null as the old one), so rows only the old image named are not re-evaluated',
  'client:seed-keeps-unassigned-scope': 'after the first connect the client keeps the seeded rows and provenance of a scope the server no longer assigns',
};

const MARK = /\/\/ fault: ((server|client):[a-z0-9-]+)/g;
const REFERENCE_DIR = fileURLToPath(new URL('../../reference/', import.meta.url));

export interface MarkedSwitch {
  name: string;
  kind: 'server' | 'client';
  /** `file:line` of each marked line, relative to the project root. */
  places: string[];
}

function sourceFiles(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === 'node_modules' ? [] : sourceFiles(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

/** The fault switches marked in reference/, found by reading its sources (never by importing them). */
export function markedSwitches(referenceDir = REFERENCE_DIR): MarkedSwitch[] {
  const found = new Map<string, MarkedSwitch>();
  for (const file of sourceFiles(referenceDir).sort()) {
    readFileSync(file, 'utf8')
      .split('\n')
      .forEach((line, index) => {
        for (const match of line.matchAll(MARK)) {
          const name = match[1] as string;
          const entry = found.get(name) ?? { name, kind: match[2] as 'server' | 'client', places: [] };
          entry.places.push(`${relative(join(referenceDir, '..'), file)}:${index + 1}`);
          found.set(name, entry);
        }
      });
  }
  return [...found.values()];
}

const SWITCH_FAULTS: readonly FaultDefinition[] = markedSwitches().map((marked) => ({
  name: marked.name,
  kind: marked.kind,
  description: SWITCH_DESCRIPTIONS[marked.name] ?? `the switch marked at ${marked.places.join(', ')}`,
}));

export const FAULTS: readonly FaultDefinition[] = [...WIRE_FAULTS, ...SWITCH_FAULTS];

export function knownFaultNames(): Set<string> {
  return new Set(FAULTS.map((fault) => fault.name));
}

export function findFault(name: string): FaultDefinition | undefined {
  return FAULTS.find((fault) => fault.name === name);
}

/** The switch name a process receives in SYNCHRO_FAULTS: the fault name without its kind prefix. */
export function switchName(fault: FaultDefinition): string {
  return fault.name.slice(fault.name.indexOf(':') + 1);
}
