/**
 * `synchro-conformance vectors run [pack...]`: checks every vector of the
 * given packs (default: every vectors/*.json, in either format) against the
 * codec, one line per vector, then a total, the SHA-256 of each pack that ran
 * and, for upstream-format packs, the aggregate hash that was verified.
 */
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { blob, text } from '../codec/index.ts';
import { EXIT_FINDINGS, EXIT_OK, UsageError } from '../errors.ts';
import { checkUpstreamVector } from './check-upstream.ts';
import { checkVector } from './check-vector.ts';
import { loadPack } from './load-pack.ts';

const VECTORS_DIR = fileURLToPath(new URL('../../vectors/', import.meta.url));
const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));

export const USAGE = 'usage: synchro-conformance vectors run [pack.json ...]';

/** Every vectors/*.json of the repository, sorted. */
export function defaultPackPaths(): string[] {
  return readdirSync(VECTORS_DIR)
    .filter((n) => n.endsWith('.json'))
    .sort()
    .map((n) => resolve(VECTORS_DIR, n));
}

/** Repository-relative POSIX path when inside the repository, otherwise the absolute path. */
function packName(path: string): string {
  const rel = relative(REPO_ROOT, resolve(path));
  return rel.startsWith('..') ? resolve(path) : rel.split('\\').join('/');
}

/**
 * The combined hash reports carry: SHA-256 over the packs sorted by path, each
 * contributing text(path) || blob(file octets) so that no two different sets
 * of files can produce the same input.
 */
export function vectorSetHash(paths: readonly string[] = defaultPackPaths()): string {
  const named = paths.map((p) => ({ name: packName(p), path: p })).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const h = createHash('sha256');
  for (const { name, path } of named) {
    h.update(text(name));
    h.update(blob(readFileSync(path)));
  }
  return h.digest('hex');
}

export async function main(args: string[]): Promise<number> {
  const [sub, ...rest] = args;
  if (sub !== 'run') throw new UsageError(USAGE);
  const option = rest.find((a) => a.startsWith('-'));
  if (option !== undefined) throw new UsageError(`unknown option ${option}\n${USAGE}`);
  const paths = rest.length > 0 ? rest : defaultPackPaths();
  // Load and validate every pack first, so a broken pack stops the run before any result is printed.
  const packs = paths.map((p) => loadPack(p));
  let passed = 0;
  let failed = 0;
  for (const pack of packs) {
    for (const { vector, line } of pack.vectors) {
      const outcome = pack.format === 'upstream' ? checkUpstreamVector(vector) : checkVector(vector);
      if (outcome.ok) passed++;
      else failed++;
      const id = String(vector.vector_id);
      console.log(outcome.ok ? `ok   ${id}` : `FAIL ${id} (${packName(pack.file)}:${line}): ${outcome.reason}`);
    }
  }
  console.log(`vectors: ${passed} passed, ${failed} failed`);
  for (const pack of packs) {
    console.log(`sha256 ${pack.sha256}  ${packName(pack.file)} (${pack.vectorSetId}, ${pack.vectors.length} vectors, ${pack.format} format)`);
    if (pack.aggregate !== undefined) console.log(`aggregate sha256 ${pack.aggregate}  ${packName(pack.file)} (verified over ${pack.vectors.length} vector hashes)`);
  }
  console.log(`vector-set sha256 ${vectorSetHash(paths)}`);
  return failed === 0 ? EXIT_OK : EXIT_FINDINGS;
}
