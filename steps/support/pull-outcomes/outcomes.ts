/**
 * The changes of the last pull answer read as the server wrote them (number
 * text kept), with the manifest table each names; "that change" (the one
 * change of that answer); and what a scenario noted under a label: a
 * server_version, and the checkpoint position the server acknowledged when a
 * labelled set of cursors was presented.
 */
import { isJsonObject } from '../../../harness/codec/index.ts';
import { currentManifest } from '../integrity/context.ts';
import { type Manifest, type ManifestTable, type Obj, parseStrict, tableById } from '../integrity/oracle.ts';
import { type CheckpointRow, checkpointsOf } from '../rebuild-replays/recorded.ts';
import type { Reply } from '../reply.ts';
import type { SyncWorld } from '../world.ts';

/** The last reply, which must be a 200 pull answer, and its changes parsed strictly. */
export function lastPullChanges(world: SyncWorld): { reply: Reply; changes: Obj[] } {
  const reply = world.lastReply();
  world.assert.equal({ endpoint: reply.endpoint, status: reply.status }, { endpoint: 'pull', status: 200 }, `the last answer is a 200 pull answer: ${reply.text.slice(0, 400)}`);
  const body = parseStrict(Buffer.from(reply.text, 'utf8'));
  const changes = isJsonObject(body) ? (body as unknown as Obj).changes : undefined;
  world.assert.ok(Array.isArray(changes), `the pull answer lists "changes": ${reply.text.slice(0, 400)}`);
  return { reply, changes: changes as Obj[] };
}

/** The one change of the last pull answer ("that change"). */
export function thatChange(world: SyncWorld): Obj {
  const { reply, changes } = lastPullChanges(world);
  if (changes.length !== 1) throw new Error(`"that change" needs a pull answer with exactly one change, not ${changes.length}: ${reply.text.slice(0, 400)}`);
  return changes[0] as Obj;
}

export async function manifestTableOf(world: SyncWorld, change: Obj): Promise<{ manifest: Manifest; table: ManifestTable }> {
  const manifest = await currentManifest(world);
  return { manifest, table: tableById(manifest, String(change.table)) };
}

/** The field ID of column `column` of `table`. */
export function fieldOf(table: ManifestTable, column: string): string {
  const field = table.fields.find((f) => f.name === column || f.field_id === column);
  if (field === undefined) throw new Error(`table ${table.name ?? table.table_id} has no column "${column}"`);
  return field.field_id;
}

const versions = new WeakMap<SyncWorld, Map<string, string>>();

export function noteVersion(world: SyncWorld, label: string, version: string): void {
  const map = versions.get(world) ?? new Map<string, string>();
  map.set(label, version);
  versions.set(world, map);
}

export function notedVersion(world: SyncWorld, label: string): string {
  const version = versions.get(world)?.get(label);
  if (version === undefined) throw new Error(`no server_version was recorded as "${label}" in this scenario`);
  return version;
}

type Position = Pick<CheckpointRow, 'stream_generation' | 'commit_lsn' | 'event_ordinal' | 'effect_ordinal'>;

const acknowledged = new WeakMap<SyncWorld, Map<string, Map<string, Position>>>();

function positionOf(row: CheckpointRow): Position {
  return { stream_generation: row.stream_generation, commit_lsn: row.commit_lsn, event_ordinal: row.event_ordinal, effect_ordinal: row.effect_ordinal };
}

/** Notes, per scope, the checkpoint the server shows for harness client `name` right after it presented the cursors of `label`. */
export async function noteAcknowledged(world: SyncWorld, name: string, label: string): Promise<void> {
  const rows = await checkpointsOf(world, name);
  const map = acknowledged.get(world) ?? new Map<string, Map<string, Position>>();
  map.set(`${name}\u0000${label}`, new Map(rows.map((row) => [row.scope_id, positionOf(row)])));
  acknowledged.set(world, map);
}

export function acknowledgedPosition(world: SyncWorld, name: string, label: string, scope: string): Position {
  const position = acknowledged.get(world)?.get(`${name}\u0000${label}`)?.get(scope);
  if (position === undefined) throw new Error(`no checkpoint of client "${name}" for ${scope} was noted when it presented the "${label}" cursors`);
  return position;
}

export async function checkpointPosition(world: SyncWorld, name: string, scope: string): Promise<Position | undefined> {
  const row = (await checkpointsOf(world, name)).find((r) => r.scope_id === scope);
  return row === undefined ? undefined : positionOf(row);
}
