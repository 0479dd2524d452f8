/**
 * The server's published schema as the harness sees it, and the controlled
 * schema changes a scenario makes. The current manifest is read over HTTP
 * from `GET /sync/schema` (straight to the server, not through the proxy, so
 * it never shows up among a client's requests); a schema change is DDL on the
 * source relation followed by the server's controlled reconfiguration
 * (`synchro.synchro_reconfigure_table`), in one transaction.
 */
import type { ServerAdapter } from '../../../harness/adapters/server.ts';
import type { SchemaManifest } from '../../../harness/wire/index.ts';
import { awaitCapture } from '../source-schema.ts';
import type { SyncWorld } from '../world.ts';
import { stateOf } from './state.ts';

export const ident = (name: string) => `"${name.replaceAll('"', '""')}"`;

export const literal = (text: string) => `'${text.replaceAll("'", "''")}'`;

/** The manifest the server serves as current right now. */
export async function currentManifest(world: SyncWorld): Promise<SchemaManifest> {
  const server = await world.readyServer();
  const response = await fetch(`${server.baseUrl}/sync/schema`, { signal: AbortSignal.timeout(world.deadlineMs) });
  const text = await response.text();
  if (response.status !== 200) throw new Error(`GET /sync/schema answered ${response.status}: ${text.slice(0, 300)}`);
  const body = JSON.parse(text) as { manifest?: SchemaManifest; schema_version?: number; schema_hash?: string };
  if (body.manifest === undefined) throw new Error(`GET /sync/schema returned no manifest: ${text.slice(0, 300)}`);
  return body.manifest;
}

/** A manifest noted earlier in the scenario under `label` (S1, S2...). */
export function notedManifest(world: SyncWorld, label: string): SchemaManifest {
  const manifest = stateOf(world).manifests.get(label);
  if (manifest === undefined) throw new Error(`no manifest was noted as ${label} earlier in this scenario`);
  return manifest;
}

function provision(server: ServerAdapter) {
  if (!server.provision) throw new Error(`server adapter "${server.id}" has no provision capability to change a source table`);
  return server.provision;
}

/**
 * Runs `ddl` on `public.<table>` and reconfigures the registration in the same
 * transaction, then reads the manifest the server publishes for it and checks
 * that it is the next one, of the expected class.
 */
export async function publishChange(world: SyncWorld, table: string, ddl: string, transitionClass: string): Promise<SchemaManifest> {
  const server = await world.readyServer();
  // The operator changes the schema once capture has caught up with the writes
  // before it: the reference reads a transaction against the registration as it
  // is when capture reaches the next registry change, not as it was at that
  // generation (docs/decisions.md, entry 19), so a change committed while
  // capture still lags behind an earlier registration would quarantine a row
  // written under the old shape. What a scenario here checks comes after.
  await awaitCapture(world);
  const before = await currentManifest(world);
  await provision(server).exec(`BEGIN;\n${ddl}\nSELECT synchro.synchro_reconfigure_table(${literal(`public.${ident(table)}`)});\nCOMMIT;`);
  await awaitCapture(world);
  const after = await currentManifest(world);
  world.assert.equal(
    { version: after.schema_version, parent: after.parent_schema, transition_class: after.transition_class },
    { version: before.schema_version + 1, parent: { version: before.schema_version, hash: before.schema_hash }, transition_class: transitionClass },
    `the manifest published after changing table ${table}`,
  );
  return after;
}

/** Literal SQL for one value of a portable type (used to seed rows and values). */
export function sqlValue(type: string, seed: number): string {
  switch (type) {
    case 'int':
    case 'int64':
    case 'float':
    case 'decimal':
      return String(seed);
    case 'bool':
    case 'boolean':
      return seed % 2 === 0 ? 'true' : 'false';
    case 'json':
      return `'{"seed":${seed}}'::jsonb`;
    case 'datetime':
      return `'2026-01-0${1 + (seed % 9)}T00:00:00Z'`;
    case 'date':
      return `'2026-01-0${1 + (seed % 9)}'`;
    default:
      return literal(`seed-${seed}`);
  }
}
