/**
 * Portable seed artifacts a scenario built: where the files live (a
 * destination directory of the scenario's own), what the last build reported,
 * and the interference the harness arranged for the next build
 * (interference.ts). The server versions the scenario's rows were given under
 * their feature labels (P1, P2...) are kept in ../version-labels.ts.
 */
import { createHash } from 'node:crypto';
import { copyFileSync, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import type { SeedArtifactResult } from '../../../harness/adapters/server.ts';
import { currentManifest } from '../integrity/context.ts';
import { undeterminedWithout } from '../optional-controls.ts';
import type { SyncWorld } from '../world.ts';
import { seedControl } from './exports.ts';
import type { Interference } from './interference.ts';

interface ArtifactState {
  /** What the harness does to the next build from outside the exporter (the fault table's prose and how). */
  arranged?: { prose: string; interference: Interference };
  last?: {
    out: string;
    result: SeedArtifactResult;
    before: string[];
    interference?: { prose: string; interference: Interference };
    /** The part of the proxy's log recorded while the export ran, as `Array.slice` takes it. */
    proxyWindow: { from: number; to: number };
  };
  /** The build result of each published artifact, by file name. */
  published: Map<string, Extract<SeedArtifactResult, { ok: true }>>;
  /** Bytes the harness kept of an artifact before a later build aimed at the same destination. */
  earlier: Map<string, { bytes: Buffer; sha256: string }>;
  /** Receipts the harness read from an artifact, by scope ("that receipt"). */
  receipts: Map<string, string>;
}

const states = new WeakMap<SyncWorld, ArtifactState>();

export function artifactState(world: SyncWorld): ArtifactState {
  let state = states.get(world);
  if (state === undefined) {
    state = { published: new Map(), earlier: new Map(), receipts: new Map() };
    states.set(world, state);
  }
  return state;
}

/** The directory every artifact of the scenario is published into; nothing else is written there. */
export function artifactDir(world: SyncWorld): string {
  const dir = join(world.scratchDir(), 'seed-artifacts');
  mkdirSync(dir, { recursive: true });
  return dir;
}

export function artifactPath(world: SyncWorld, file: string): string {
  if (file.includes('/') || file.startsWith('.')) throw new Error(`artifact name ${JSON.stringify(file)} must be a plain file name`);
  return join(artifactDir(world), file);
}

export function sha256(bytes: Buffer): string {
  return createHash('sha256').update(bytes).digest('hex');
}

export function fileSha256(path: string): string {
  return sha256(readFileSync(path));
}

/**
 * A server adapter whose seed capability cannot build artifacts (a server
 * certified through a config: the control protocol has no artifact control)
 * leaves the step undetermined, naming what is missing, instead of failing.
 */
export async function withoutArtifactBuilder(world: SyncWorld): Promise<'skipped' | undefined> {
  const seed = await seedControl(world);
  if (seed.exportArtifact !== undefined) return undefined;
  return undeterminedWithout(world, `server adapter "${(await world.readyServer()).id}" offers no seed.exportArtifact() to build a portable seed artifact`);
}

/** Runs one artifact build into `file` with the arranged interference (used once) and keeps what it reported. */
export async function buildArtifact(world: SyncWorld, file: string, pageLimit: number | undefined): Promise<SeedArtifactResult> {
  const seed = await seedControl(world);
  if (seed.exportArtifact === undefined) throw new Error('the server adapter\'s seed capability cannot build portable seed artifacts (seed.exportArtifact)');
  // The export binds the published manifest; asking for the current schema lets a server that publishes on demand do so first.
  await currentManifest(world);
  const state = artifactState(world);
  const out = artifactPath(world, file);
  const before = readdirSync(artifactDir(world)).sort();
  const arranged = state.arranged;
  state.arranged = undefined;
  const armed = arranged === undefined ? undefined : await arranged.interference.arm(world);
  const proxy = await world.proxy();
  const from = proxy.exchanges.length;
  let result: SeedArtifactResult;
  try {
    result = await seed.exportArtifact({ out, ...(pageLimit === undefined ? {} : { pageLimit }), ...(armed === undefined ? {} : { intercept: armed.intercept }) });
  } finally {
    armed?.settle();
  }
  state.last = { out, result, before, ...(arranged === undefined ? {} : { interference: arranged }), proxyWindow: { from, to: proxy.exchanges.length } };
  if (result.ok) state.published.set(file, result);
  return result;
}

export function publishedResult(world: SyncWorld, file: string): Extract<SeedArtifactResult, { ok: true }> {
  const result = artifactState(world).published.get(file);
  if (result === undefined) throw new Error(`no export of this scenario published "${file}"`);
  return result;
}

/** A copy of a published artifact for client `name` to open, outside the destination directory. */
export function copyForClient(world: SyncWorld, file: string, name: string): string {
  const dir = join(world.scratchDir(), 'seed-copies');
  mkdirSync(dir, { recursive: true });
  const copy = join(dir, `${name}-${file}`);
  copyFileSync(artifactPath(world, file), copy);
  return copy;
}

/** `"p1" to "p5"` as the list p1..p5: the same prefix, numbered suffixes. */
export function labelRange(first: string, last: string): string[] {
  const a = /^(.*?)(\d+)$/.exec(first);
  const b = /^(.*?)(\d+)$/.exec(last);
  if (!a || !b || a[1] !== b[1] || Number(a[2]) > Number(b[2])) throw new Error(`"${first}" to "${last}" is not a numbered range`);
  const out: string[] = [];
  for (let k = Number(a[2]); k <= Number(b[2]); k += 1) out.push(`${a[1]}${k}`);
  return out;
}

/** The receipt the harness read for `scope` earlier in the scenario. */
export function readReceipt(world: SyncWorld, scope: string): string {
  const receipt = artifactState(world).receipts.get(scope);
  if (receipt === undefined) throw new Error(`the harness read no receipt for ${scope} from a seed artifact`);
  return receipt;
}

/** Scope → receipt, as the artifact stores them (`_synchro_seed_receipts`, the client contract's table). */
export function artifactReceipts(world: SyncWorld, file: string): Record<string, string> {
  const db = new Database(artifactPath(world, file), { readonly: true, fileMustExist: true });
  try {
    const rows = db.prepare('SELECT scope_id, receipt FROM _synchro_seed_receipts ORDER BY scope_id').all() as { scope_id: string; receipt: string }[];
    return Object.fromEntries(rows.map((r) => [r.scope_id, r.receipt]));
  } finally {
    db.close();
  }
}
