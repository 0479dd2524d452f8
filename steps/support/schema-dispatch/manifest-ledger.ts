/**
 * The harness's ledger of every manifest the server served in a scenario
 * (SYNC-SCHEMA-001), keyed by version and by hash: one version or one hash
 * served with two different bodies is the violation the requirement names.
 * Bodies are kept in their RFC 8785 form, the form the manifest is hashed in.
 */
import { canonicalJson } from '../../../harness/codec/index.ts';
import type { Reply } from '../reply.ts';
import type { SyncWorld } from '../world.ts';

type Obj = Record<string, unknown>;

export class ManifestLedger {
  readonly #byVersion = new Map<number, Set<string>>();
  readonly #byHash = new Map<string, Set<string>>();
  /** Manifests the scenario names ("m1", "served", "first-connect", "before-publication"). */
  readonly labels = new Map<string, Obj>();
  /** The answers to the concurrent connects of the race scenario. */
  race: Reply[] | undefined;
  /** The outcome of the operator's attempt to change a stored manifest. */
  attempt: { failed: boolean; message: string } | undefined;

  noteManifest(manifest: unknown): void {
    const m = manifest as Obj | undefined;
    if (m === undefined || m === null || typeof m !== 'object') return;
    const text = canonicalJson(m);
    const add = <K>(map: Map<K, Set<string>>, key: K) => map.set(key, (map.get(key) ?? new Set()).add(text));
    add(this.#byVersion, Number(m.schema_version));
    add(this.#byHash, String(m.schema_hash));
  }

  noteReply(reply: Reply): void {
    if (reply.status === 200) this.noteManifest(reply.json?.schema_definition);
  }

  size(): number {
    return this.#byVersion.size;
  }

  conflicts(): string[] {
    return [
      ...[...this.#byVersion].filter(([, bodies]) => bodies.size > 1).map(([v, bodies]) => `version ${v}: ${bodies.size} bodies`),
      ...[...this.#byHash].filter(([, bodies]) => bodies.size > 1).map(([h, bodies]) => `hash ${h}: ${bodies.size} bodies`),
    ];
  }
}

const ledgers = new WeakMap<SyncWorld, ManifestLedger>();

export function ledgerOf(world: SyncWorld): ManifestLedger {
  let ledger = ledgers.get(world);
  if (ledger === undefined) {
    ledger = new ManifestLedger();
    ledgers.set(world, ledger);
  }
  return ledger;
}

export function manifestText(manifest: Obj): string {
  return canonicalJson(manifest);
}

/**
 * The manifest GET /sync/schema serves, straight from the server. `text` is
 * the member as the server wrote it: the raw bytes between `"manifest":` and
 * the member after it, cut out of the body without re-encoding.
 */
export async function schemaEndpointManifest(world: SyncWorld): Promise<{ manifest: Obj; text: string }> {
  const server = await world.readyServer();
  const response = await fetch(`${server.baseUrl}/sync/schema`, { signal: AbortSignal.timeout(world.deadlineMs) });
  const body = await response.text();
  if (response.status !== 200) throw new Error(`GET /sync/schema answered ${response.status}: ${body.slice(0, 300)}`);
  const parsed = JSON.parse(body) as { manifest?: Obj };
  if (parsed.manifest === undefined) throw new Error(`GET /sync/schema served no manifest: ${body.slice(0, 300)}`);
  return { manifest: parsed.manifest, text: rawMember(body, 'manifest') ?? canonicalJson(parsed.manifest) };
}

/** The raw text of top-level object member `name` of a JSON object text, or undefined when it cannot be cut out. */
function rawMember(text: string, name: string): string | undefined {
  const key = `"${name}":`;
  const at = text.indexOf(key);
  if (at < 0) return undefined;
  const start = at + key.length;
  let depth = 0;
  let inString = false;
  for (let i = start; i < text.length; i += 1) {
    const ch = text[i];
    if (inString) {
      if (ch === '\\') i += 1;
      else if (ch === '"') inString = false;
      continue;
    }
    if (ch === '"') inString = true;
    else if (ch === '{' || ch === '[') depth += 1;
    else if (ch === '}' || ch === ']') {
      depth -= 1;
      if (depth === 0) return text.slice(start, i + 1);
    }
  }
  return undefined;
}
