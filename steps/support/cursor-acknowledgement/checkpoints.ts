/**
 * What server inspection shows about acknowledgement: the checkpoint a
 * client holds for a scope and the position a cursor the server issued
 * names, both in the server's own comparable text form (the reference's
 * inspection functions, reference/server/sql/031-checkpoint-inspection.sql).
 * The harness never decodes a cursor itself: a token stays opaque to it.
 */
import { inspectRows } from '../capture/inspection.ts';
import { generationsState } from '../scope-generations/state.ts';
import type { SyncWorld } from '../world.ts';

/** The checkpoint `client` holds for `scope` (null when none) and the position inside `cursor`. */
export async function checkpointAndCursor(world: SyncWorld, clientId: string, scope: string, cursor: string): Promise<{ checkpoint: string | null; position: string | null }> {
  const [row] = await inspectRows<{ checkpoint: string | null; position: string | null }>(
    world,
    'SELECT synchro.synchro_inspect_checkpoint($1, $2) AS checkpoint, synchro.synchro_inspect_cursor_position($3) AS position',
    [clientId, scope, cursor],
  );
  if (row?.position === null || row?.position === undefined) throw new Error(`server inspection cannot read the position of cursor ${cursor.slice(0, 40)}…`);
  return { checkpoint: row.checkpoint, position: row.position };
}

/** A cursor recorded under `label` for `scope` earlier in the scenario. */
export function recordedCursor(world: SyncWorld, label: string, scope: string): string {
  const cursor = generationsState(world).cursors.get(label)?.get(scope);
  if (typeof cursor !== 'string') throw new Error(`no cursor of ${scope} was recorded as "${label}" earlier in this scenario`);
  return cursor;
}

/** Records `cursor` for `scope` under `label`, beside whatever else that label holds. */
export function recordCursor(world: SyncWorld, label: string, scope: string, cursor: string): void {
  const cursors = generationsState(world).cursors;
  cursors.set(label, new Map([...(cursors.get(label) ?? new Map<string, string | null>()), [scope, cursor]]));
}
