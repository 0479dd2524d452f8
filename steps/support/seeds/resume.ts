/**
 * Seed resume (SYNC-SEED-003): the export manifest an artifact was built
 * from, receipts altered or withheld before a first connect, and artifact
 * copies with a receipt removed.
 */
import { copyFileSync } from 'node:fs';
import Database from 'better-sqlite3';
import { canonicalJson } from '../../../harness/codec/index.ts';
import type { SyncWorld } from '../world.ts';
import { artifactPath, artifactReceipts, artifactState, publishedResult } from './artifacts.ts';
import { connectsOf, type Obj } from './receipt-conversion.ts';

/** The export manifest of the last artifact published in the scenario, as the server issued it. */
export function exportManifest(world: SyncWorld): Obj {
  const file = [...artifactState(world).published.keys()].at(-1);
  if (file === undefined) throw new Error('no seed artifact was published in this scenario');
  const manifest = publishedResult(world, file).exportManifest;
  if (manifest === undefined) throw new Error(`the seed export of ${file} reported no export manifest (SeedArtifactResult.exportManifest)`);
  return manifest;
}

export function exportEntry(world: SyncWorld, scope: string): Obj {
  const entries = (exportManifest(world).portable_scopes ?? []) as Obj[];
  const entry = entries.find((e) => e.id === scope);
  if (entry === undefined) throw new Error(`the export manifest has no portable scope "${scope}"`);
  return entry;
}

/** `receipt` with its `member` changed to `value` and the MAC kept: one edited character of the payload's JSON. */
export function editedReceipt(receipt: string, member: string, value: (current: unknown) => unknown): string {
  const [prefix, payloadText, mac, ...rest] = receipt.split('.');
  if (prefix === undefined || payloadText === undefined || mac === undefined || rest.length > 0) throw new Error('a receipt has three dot-separated parts');
  const payload = JSON.parse(Buffer.from(payloadText, 'base64url').toString('utf8')) as Obj;
  if (!(member in payload)) throw new Error(`the receipt payload has no member "${member}"`);
  payload[member] = value(payload[member]);
  return `${prefix}.${Buffer.from(canonicalJson(payload), 'utf8').toString('base64url')}.${mac}`;
}

/** A first connect of harness client `name` with the seed's schema and `receipts`. */
export async function connectPresenting(world: SyncWorld, name: string, user: string, file: string, receipts: Record<string, string>): Promise<void> {
  await world.readyServer();
  const client = world.newWire(name, user);
  const seed = publishedResult(world, file);
  // With no receipt left the connect carries none: a first connect on the seeded schema alone.
  const reply = await client.connect({ schema: { ...seed.schema }, ...(Object.keys(receipts).length === 0 ? {} : { seed_receipts: receipts }) });
  connectsOf(world).set(name, (reply.status === 200 ? reply.json : { status: reply.status, body: reply.json }) as Obj);
}

export function receiptsOf(world: SyncWorld, file: string): Record<string, string> {
  return artifactReceipts(world, file);
}

/** Copies artifact `file` to `saved` in the artifact directory and deletes the stored receipt of `scope` from the copy. */
export function copyWithoutReceipt(world: SyncWorld, file: string, scope: string, saved: string): void {
  const target = artifactPath(world, saved);
  copyFileSync(artifactPath(world, file), target);
  const db = new Database(target);
  try {
    const removed = db.prepare('DELETE FROM _synchro_seed_receipts WHERE scope_id = ?').run(scope).changes;
    if (removed !== 1) throw new Error(`the artifact ${file} stores no receipt for ${scope} to remove`);
    db.pragma('journal_mode = DELETE');
  } finally {
    db.close();
  }
}
