/** Wire faults made for the recipes of the Protocol Invariants section (what each breaks is said in invariants.yaml). */
import type { Exchange } from '../../proxy/records.ts';
import { RawJson } from '../../proxy/rewrite.ts';
import { parseLoosely } from '../../proxy/validation.ts';
import { type FaultDefinition, wire } from './define.ts';

export const PROTOCOL_WIRE_FAULTS: readonly FaultDefinition[] = [
  // SYNC-PROTO-001..005
  wire('offset-datetime', [
    { endpoint: 'pull', times: Number.POSITIVE_INFINITY, fault: { kind: 'rewrite', describe: 'write each datetime value of the pulled rows with +00:00 instead of Z', transform: offsetDatetimes } },
    { endpoint: 'rebuild', times: Number.POSITIVE_INFINITY, fault: { kind: 'rewrite', describe: 'write each datetime value of the rebuilt rows with +00:00 instead of Z', transform: offsetDatetimes } },
    { endpoint: 'push', times: Number.POSITIVE_INFINITY, fault: { kind: 'rewrite', describe: 'write each datetime value of the returned rows with +00:00 instead of Z', transform: offsetDatetimes } },
  ]),
  wire('server-time-milliseconds', [
    { endpoint: 'connect', times: Number.POSITIVE_INFINITY, fault: { kind: 'rewrite', describe: 'cut server_time to three fraction digits', transform: millisecondServerTime } },
    { endpoint: 'push', times: Number.POSITIVE_INFINITY, fault: { kind: 'rewrite', describe: 'cut server_time to three fraction digits', transform: millisecondServerTime } },
  ]),
  wire('int64-row-values-as-numbers', [
    { endpoint: 'push', times: Number.POSITIVE_INFINITY, fault: { kind: 'rewrite', describe: 'write the digit-string values of each server_row as JSON numbers', transform: digitStringsAsNumbers } },
  ]),
  wire('null-cursor-not-rebuilt', [
    { endpoint: 'pull', times: Number.POSITIVE_INFINITY, fault: { kind: 'rewrite', describe: 'leave out of "rebuild" the scopes the request presented with a null cursor', transform: nullCursorScopesNotRebuilt } },
  ]),
  wire('long-server-version', [
    { endpoint: 'push', times: Number.POSITIVE_INFINITY, fault: { kind: 'rewrite', describe: 'pad the server_version of each push outcome to 65 octets', transform: paddedServerVersions } },
  ]),
  wire('server-version-from-client-version', [
    { endpoint: 'push', times: Number.POSITIVE_INFINITY, fault: { kind: 'rewrite', describe: 'report as server_version of each applied outcome the client_version of its mutation', transform: clientVersionsAsServerVersions } },
  ]),
  // SYNC-PROTO-006..011
  wire('pull-scope-updates-emptied', [
    { endpoint: 'pull', times: Number.POSITIVE_INFINITY, fault: { kind: 'rewrite', describe: 'empty scope_updates of each pull answer that reports a change, keeping its scope_set_version', transform: emptyScopeUpdates } },
  ]),
  wire('pull-tombstone-as-update', [
    { endpoint: 'pull', times: Number.POSITIVE_INFINITY, fault: { kind: 'rewrite', describe: 'report each tombstone (a delete carrying its row) of a pull answer with op "update"', transform: tombstonesAsUpdate } },
  ]),
];

// biome-ignore lint/suspicious/noExplicitAny: a transform edits the parsed body member by member
type Loose = any;

const outcomesOf = (json: Loose): Loose[] => [...(Array.isArray(json?.accepted) ? json.accepted : []), ...(Array.isArray(json?.rejected) ? json.rejected : [])];

const DATETIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/;

/** Every datetime value of the rows a body carries (pull changes, rebuild records, push server rows) spelled with a +00:00 offset, the same instant. */
function offsetDatetimes(json: Loose): unknown {
  const rows = [...(Array.isArray(json?.changes) ? json.changes : []), ...(Array.isArray(json?.records) ? json.records : [])].map((item: Loose) => item?.row);
  for (const outcome of outcomesOf(json)) rows.push(outcome?.server_row);
  let edited = false;
  for (const row of rows) {
    if (row === null || typeof row !== 'object') continue;
    for (const [field, value] of Object.entries(row)) {
      if (typeof value !== 'string' || !DATETIME.test(value)) continue;
      row[field] = `${value.slice(0, -1)}+00:00`;
      edited = true;
    }
  }
  return edited ? json : undefined;
}

/** server_time as JavaScript's toISOString() writes it: milliseconds, not microseconds. */
function millisecondServerTime(json: Loose): unknown {
  const time = json?.server_time;
  if (typeof time !== 'string' || !/\.\d{6}Z$/.test(time)) return undefined;
  json.server_time = time.replace(/(\.\d{3})\d{3}Z$/, '$1Z');
  return json;
}

/** Each server_row value made only of decimal digits (an int64, which travels as a string) becomes a number token. */
function digitStringsAsNumbers(json: Loose): unknown {
  let edited = false;
  for (const outcome of outcomesOf(json)) {
    const row = outcome?.server_row;
    if (row === null || typeof row !== 'object') continue;
    for (const [field, value] of Object.entries(row)) {
      if (typeof value !== 'string' || !/^-?[0-9]+$/.test(value)) continue;
      row[field] = new RawJson(value);
      edited = true;
    }
  }
  return edited ? json : undefined;
}

/** Scopes the pull request presented with a null cursor are dropped from `rebuild`, as if null were no instruction at all. */
function nullCursorScopesNotRebuilt(json: Loose, exchange: Exchange): unknown {
  const presented = (parseLoosely(exchange.requestBody) as Loose)?.scopes ?? {};
  const nulled = new Set(Object.keys(presented).filter((scope) => presented[scope]?.cursor === null));
  if (!Array.isArray(json?.rebuild) || !json.rebuild.some((scope: string) => nulled.has(scope))) return undefined;
  json.rebuild = json.rebuild.filter((scope: string) => !nulled.has(scope));
  return json;
}

function paddedServerVersions(json: Loose): unknown {
  let edited = false;
  for (const outcome of outcomesOf(json)) {
    if (typeof outcome?.server_version !== 'string') continue;
    outcome.server_version = outcome.server_version.padEnd(65, '0');
    edited = true;
  }
  return edited ? json : undefined;
}

function clientVersionsAsServerVersions(json: Loose, exchange: Exchange): unknown {
  const sent = new Map<string, unknown>();
  for (const m of (parseLoosely(exchange.requestBody) as Loose)?.mutations ?? []) sent.set(m?.mutation_id, m?.client_version);
  let edited = false;
  for (const outcome of Array.isArray(json?.accepted) ? json.accepted : []) {
    const clientVersion = sent.get(outcome?.mutation_id);
    if (typeof clientVersion !== 'string' || typeof outcome?.server_version !== 'string') continue;
    outcome.server_version = clientVersion;
    edited = true;
  }
  return edited ? json : undefined;
}

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
