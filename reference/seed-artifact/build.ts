/**
 * Builds and publishes one seed artifact: export, checks 1-7, the SQLite file
 * under a temporary name in the destination directory (check 8), a read-only
 * reopen that verifies it the way a client will (check 9), the sidecar and
 * final-bytes evidence (check 10), then an atomic rename. Any failure removes
 * the temporary file and leaves the destination as it was.
 *
 * A caller may pause the build at four points (`pauses`) to look at or change
 * the work in progress from outside: the export as read, the written file,
 * the file under verification and the file whose evidence is recorded. That
 * is how a test damages an export in transit or on disk, or kills the build
 * while it verifies, without the builder injecting anything itself.
 */
import { createHash } from 'node:crypto';
import { copyFileSync, existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import type { ClientBase } from 'pg';
import { ClientError } from '../client/errors.ts';
import { verifySeedFile } from '../client/local/seed.ts';
import { fault as serverFault } from '../server/core/faults.ts';
import { SeedArtifactError, type SeedCheck } from './errors.ts';
import { type ExportRun, runExport } from './export-run.ts';
import { type FaultSwitch, faultSwitch } from './faults.ts';
import { tamper } from './tamper.ts';
import { removeWithSidecars, tempPath } from './temp-files.ts';
import { type VerifiedExport, verifyExport } from './verify-export.ts';
import { writeSeedFile } from './write-file.ts';

export interface BuildOptions {
  /** Where the artifact is published. */
  out: string;
  pageLimit?: number;
  /** Fault names to arm (in addition to SYNCHRO_SEED_FAULT). */
  faults?: readonly string[];
  /** Points where the build waits for its caller, who may look at or change the work in progress. */
  pauses?: BuildPauses;
}

/** Where a build can pause; each hook is awaited before the build goes on. */
export interface BuildPauses {
  /** The export as read, before any check: the checks see what this returns. */
  exported?(run: ExportRun): Promise<ExportRun>;
  /** The file is written under its temporary name `temp` and not yet verified. */
  written?(temp: string): Promise<void>;
  /** The file at `temp` passed the client's own check; its comparison with the export comes next. */
  verifying?(temp: string): Promise<void>;
  /** `sha256` is recorded as release evidence for `temp`; the file is read again and renamed next. */
  hashed?(temp: string, sha256: string): Promise<void>;
}

export interface BuildResult {
  path: string;
  /** Release evidence: hex SHA-256 of the published bytes. */
  sha256: string;
  exportId: string;
  exportManifestHash: string;
  schema: { version: number; hash: string };
  scopes: { id: string; cardinality: number; checksum: string }[];
  /** The export manifest the artifact was built from, without its page tokens (they were valid only in the export's transaction). */
  exportManifest: Record<string, unknown>;
}

const SIDECARS = ['-wal', '-shm', '-journal'];

/** The check a client-side refusal corresponds to. */
function checkOf(e: ClientError): SeedCheck {
  const check = e.metadata?.check;
  return check === 'sqlite integrity' || check === 'queue and provenance' || check === 'receipt' ? check : check === 'row digest' || check === 'scope digest' ? 'cardinality and digest' : 'sqlite integrity';
}

/** Check 9 plus a comparison of what the file states with what the export verified. */
async function verifyFile(path: string, v: VerifiedExport, fault: FaultSwitch, pauses: BuildPauses): Promise<void> {
  let summary: ReturnType<typeof verifySeedFile>;
  try {
    summary = verifySeedFile(path);
  } catch (e) {
    if (e instanceof ClientError) throw new SeedArtifactError(checkOf(e), e.message);
    throw e;
  }
  await pauses.verifying?.(path);
  // Only for the fault: verification stops here, as if the exporter died before finishing it.
  if (fault('kill-during-verify')) throw new SeedArtifactError('verification not finished', 'the exporter stopped before verification finished'); // fault: seed:kill-during-verify
  if (summary.exportId !== v.exportId || summary.schema.hash !== v.schema.hash || summary.schema.version !== v.schema.version) {
    throw new SeedArtifactError('queue and provenance', 'the file names another export or schema');
  }
  const expected = v.scopes.map((s) => `${s.entry.id}|${s.entry.continuation}|${s.entry.cardinality}|${s.entry.checksum.digest}`).sort();
  const stored = summary.receipts.map((r) => `${r.scopeId}|${r.receipt}|${r.cardinality}|${r.checksum}`).sort();
  if (expected.join('\n') !== stored.join('\n')) throw new SeedArtifactError('receipt', 'the stored receipts differ from the verified export');
  for (const s of v.scopes) {
    if (summary.digests[s.entry.id] !== s.entry.checksum.digest) throw new SeedArtifactError('cardinality and digest', `the file's rows of ${s.entry.id} do not digest to the manifest's checksum`);
  }
}

/** Check 10: a rollback-journal file with nothing beside it. */
function checkSidecars(path: string): void {
  const header = readFileSync(path).subarray(18, 20);
  if (header[0] !== 1 || header[1] !== 1) throw new SeedArtifactError('sidecar', 'the file is in WAL mode and would need a -wal/-shm file');
  for (const suffix of SIDECARS) if (existsSync(`${path}${suffix}`)) throw new SeedArtifactError('sidecar', `a ${suffix} file is left beside the artifact`);
}

function sha256(bytes: Buffer): string {
  return createHash('sha256').update(bytes).digest('hex');
}

function corruptOnePage(path: string): void {
  const bytes = readFileSync(path);
  const pageSize = bytes.readUInt16BE(16) === 1 ? 65536 : bytes.readUInt16BE(16);
  bytes.fill(0xff, pageSize, pageSize + 64); // fault: seed:corrupt-page
  writeFileSync(path, bytes);
}

export async function buildSeedArtifact(db: ClientBase, options: BuildOptions): Promise<BuildResult> {
  const fault = faultSwitch([...(process.env.SYNCHRO_SEED_FAULT ?? '').split(','), ...(options.faults ?? [])]);
  const limit = options.pageLimit ?? 1000;
  if (!Number.isInteger(limit) || limit < 1 || limit > 1000) throw new SeedArtifactError('input', `the page limit must be an integer from 1 to 1000, got ${limit}`);
  if (!existsSync(dirname(options.out))) throw new SeedArtifactError('input', `the destination directory ${dirname(options.out)} does not exist`);
  const pauses = options.pauses ?? {};
  let run = await runExport(db, limit, fault);
  tamper(run, fault);
  if (pauses.exported !== undefined) run = await pauses.exported(run);
  const verified = verifyExport(run);
  const temp = tempPath(options.out);
  let writer: ReturnType<typeof writeSeedFile>;
  try {
    writer = writeSeedFile(temp, verified, fault);
    try {
      if (fault('corrupt-page')) corruptOnePage(temp);
      await pauses.written?.(temp);
      if (serverFault('seed-publish-before-verify')) copyFileSync(temp, options.out); // fault: server:seed-publish-before-verify
      await verifyFile(temp, verified, fault, pauses);
      checkSidecars(temp);
    } finally {
      writer?.close();
    }
    const bytes = readFileSync(temp);
    const evidence = fault('hash-other-bytes') ? sha256(Buffer.concat([bytes, Buffer.from([0])])) : sha256(bytes); // fault: seed:hash-other-bytes
    await pauses.hashed?.(temp, evidence);
    // The evidence must describe the bytes about to be published, read again just before the rename.
    if (sha256(readFileSync(temp)) !== evidence) throw new SeedArtifactError('artifact hash', 'the recorded SHA-256 is not the hash of the file being published');
    renameSync(temp, options.out);
    return {
      path: options.out,
      sha256: evidence,
      exportId: verified.exportId,
      exportManifestHash: run.manifest.export_manifest_hash,
      schema: { version: verified.schema.version, hash: verified.schema.hash },
      scopes: verified.scopes.map((s) => ({ id: s.entry.id, cardinality: s.entry.cardinality, checksum: s.entry.checksum.digest })),
      exportManifest: { ...run.manifest, portable_scopes: run.manifest.portable_scopes.map(({ page_token: _token, ...entry }) => entry) },
    };
  } finally {
    removeWithSidecars(temp);
  }
}

export { leftoverTemps } from './temp-files.ts';
