/**
 * Capture-store faults of SYNC-PULL-004, through the adapter's optional
 * `capture.store` control: the operator deletes the captured projection of
 * the latest effect of a row, or overwrites its stored row digest, and later
 * removes every such fault. Without the control the step is skipped with
 * evidence naming it, so the scenario is undetermined, never passed.
 */
import type { CaptureStoreFault } from '../../../harness/adapters/server.ts';
import { currentManifest } from '../integrity/context.ts';
import { undeterminedWithout } from '../optional-controls.ts';
import type { SyncWorld } from '../world.ts';

export const FAULT_OF_STEP: Record<string, CaptureStoreFault> = {
  'deletes the captured projection': 'projection_missing',
  'overwrites the stored row digest': 'digest_overwritten',
};

/** The one table the scenario registered: the step names a row, not its table. */
function onlyTable(world: SyncWorld): string {
  const names = [...world.model.tables.keys()];
  if (names.length !== 1) throw new Error(`the capture-store fault step names a row but no table, so the scenario must register exactly one table, not ${names.length} (${names.join(', ')})`);
  return names[0] as string;
}

export async function injectStoreFault(world: SyncWorld, fault: CaptureStoreFault, pkText: string, scope: string): Promise<'skipped' | undefined> {
  const server = await world.readyServer();
  const control = server.capture?.store;
  if (control === undefined) return undeterminedWithout(world, `server adapter "${server.id}" offers no capture.store (capture.store-fault, capture.store-restore) to damage and repair a captured effect`);
  const name = onlyTable(world);
  const table = (await currentManifest(world)).tables.find((t) => t.name === name);
  if (table === undefined) throw new Error(`the server's manifest has no table "${name}"`);
  const keyType = table.fields.find((f) => f.field_id === table.primary_key_field_id)?.type;
  const pk = keyType === 'int' ? Number(pkText) : pkText;
  await control.inject(fault, { table: table.table_id, scope, pk });
  return undefined;
}

export async function removeStoreFaults(world: SyncWorld): Promise<'skipped' | undefined> {
  const server = await world.readyServer();
  const control = server.capture?.store;
  if (control === undefined) return undeterminedWithout(world, `server adapter "${server.id}" offers no capture.store (capture.store-fault, capture.store-restore) to repair a captured effect`);
  const restored = await control.restore();
  if (restored < 1) throw new Error(`the operator removed the injected capture-store fault, but the server restored ${restored} effects`);
  return undefined;
}
