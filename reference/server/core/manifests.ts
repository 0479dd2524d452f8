/**
 * Manifest publication. Registration (SQL) activates registry generations;
 * the server turns the active registry into an immutable manifest, hashed by
 * the codec, the first time a request sees a generation it has not checked.
 * A change that alters nothing a client sees publishes nothing (Class 1).
 */
import type { Pool, PoolClient } from 'pg';
import { canonicalJson, readTableShape, schemaManifestHash, schemaManifestHashUnchecked, utf8Order } from '../../../harness/codec/index.ts';
import { fault } from './faults.ts';
import { named } from './named-statements.ts';
import type { BootstrapDriver, BootstrapRequest } from './projection-bootstrap-control.ts';
import { type AddedValues, addedValues, type FieldChange, fieldChanges, reshapeStoredRows, type TableLite as ShapeLite } from './reshape.ts';
import { loadTables, manifestTable, type TableDef } from './tables.ts';

export interface Manifest {
  version: number;
  hash: string;
  transitionClass: string;
  parent: { version: number; hash: string } | null;
  /** Class 3 only: the scopes whose rows must be rematerialized (bytewise order). */
  affectedScopes: string[];
  /** The whole manifest (schema_hash included) as RFC 8785 text: what connect and /sync/schema send. */
  text: string;
  body: Record<string, unknown>;
}

export interface Catalog {
  current: Manifest;
  tables: Map<string, TableDef>;
  /** Every published manifest by version, for lineage walks and authored-schema checks. */
  history: Map<number, Manifest>;
}

interface ManifestRow {
  schema_version: string;
  schema_hash: string;
  parent_version: string | null;
  parent_hash: string | null;
  transition_class: string;
  body_text: string;
}

function toManifest(r: ManifestRow): Manifest {
  return {
    version: Number(r.schema_version),
    hash: r.schema_hash,
    transitionClass: r.transition_class,
    parent: r.parent_version === null || r.parent_hash === null ? null : { version: Number(r.parent_version), hash: r.parent_hash },
    affectedScopes: [],
    text: r.body_text,
    body: JSON.parse(r.body_text) as Record<string, unknown>,
  };
}

type FieldLite = { field_id: string; type: string; nullable: boolean; writable: boolean; precision?: number; scale?: number };
type TableLite = { table_id: string; primary_key_field_id: string; fields: FieldLite[] };

/** Class of the step from `before` to `after`: removals or changed fields are incompatible; additions are additive. */
function transitionClass(before: TableLite[], after: TableLite[]): 'class_2' | 'class_4' {
  const next = new Map(after.map((t) => [t.table_id, t]));
  for (const t of before) {
    const n = next.get(t.table_id);
    if (n === undefined || n.primary_key_field_id !== t.primary_key_field_id) return 'class_4';
    const fields = new Map(n.fields.map((f) => [f.field_id, f]));
    for (const f of t.fields) {
      const g = fields.get(f.field_id);
      if (g === undefined || canonicalJson({ ...g, name: '' }) !== canonicalJson({ ...f, name: '' })) return 'class_4';
    }
    for (const g of n.fields) if (!t.fields.some((f) => f.field_id === g.field_id) && !g.nullable) return 'class_4';
  }
  return 'class_2';
}

export class ManifestStore {
  readonly #pool: Pool;
  readonly #bootstrap: BootstrapDriver | undefined;
  #catalog: Catalog | undefined;
  #generation = -1;

  /** With a bootstrap driver, a step whose added fields already hold values waits for its bootstrap instead of reading live rows. */
  constructor(pool: Pool, bootstrap?: BootstrapDriver) {
    this.#pool = pool;
    this.#bootstrap = bootstrap;
  }

  /** The catalog this store last took into force, without asking the database (undefined before the first). */
  get known(): Catalog | undefined {
    return this.#catalog;
  }

  /** The catalog for the active registry generation, publishing a manifest first if one is due. */
  async catalog(): Promise<Catalog> {
    const db = await this.#pool.connect();
    try {
      const { rows } = await db.query<{ g: string; c: string }>(
        named('SELECT (SELECT coalesce(max(generation), 0) FROM synchro.registry_generations) g, (SELECT checked_generation FROM synchro.manifest_state) c'),
      );
      const g = Number(rows[0]?.g ?? 0);
      if (this.#catalog !== undefined && g === this.#generation && Number(rows[0]?.c) === g) return this.#catalog;
      const first = await this.#publishOnce(db);
      if (first.due === undefined || this.#bootstrap === undefined) return first.catalog;
      // The step waits for its bootstrap: run it (unless held), then answer with whatever is active now.
      // A bootstrap that fails leaves the previous manifest in force; its record says why.
      await this.#bootstrap.due(first.due).catch(() => undefined);
      return (await this.#publishOnce(db)).catalog;
    } finally {
      db.release();
    }
  }

  async #publishOnce(db: PoolClient): Promise<Published> {
    await db.query('BEGIN');
    try {
      await db.query('SET LOCAL ROLE synchro_owner');
      const published = await publish(db, { defer: this.#bootstrap !== undefined });
      await db.query('COMMIT');
      if (published.due === undefined) {
        this.#catalog = published.catalog;
        this.#generation = published.generation;
      }
      return published;
    } catch (e) {
      await db.query('ROLLBACK').catch(() => undefined);
      throw e;
    }
  }
}

interface Published {
  catalog: Catalog;
  generation: number;
  /** Set when the registry's step waits for a Class 3 bootstrap: the catalog is still the previous manifest's. */
  due?: BootstrapRequest;
}

/**
 * The bootstrap's activation (capture/projection-bootstrap.ts): publishes the
 * step that waited, in the caller's transaction, with the added values the
 * bootstrap staged instead of live ones. Returns the manifest now in force.
 */
export async function publishBootstrapped(db: PoolClient, staged: AddedValues): Promise<Manifest> {
  return (await publish(db, { staged })).catalog.current;
}

/** The tables as the manifest in force shows them: fields a later, not yet active step adds are left out. */
function narrowedToManifest(tables: Map<string, TableDef>, manifest: Manifest): Map<string, TableDef> {
  const shown = new Map((manifest.body.tables as TableLite[]).map((t) => [t.table_id, new Set(t.fields.map((f) => f.field_id))]));
  const out = new Map<string, TableDef>();
  for (const [id, def] of tables) {
    const fields = shown.get(id);
    if (fields === undefined) continue;
    const kept = def.fields.filter((f) => fields.has(f.fieldId));
    const narrowed: TableDef = { ...def, fields: kept, byId: new Map(kept.map((f) => [f.fieldId, f])) };
    // Row digests follow the shape the manifest in force declares.
    narrowed.shape = readTableShape(manifestTable(narrowed));
    out.set(id, narrowed);
  }
  return out;
}

/** The step needs history when a field it adds already holds a value in some source row. */
async function needsHistory(db: PoolClient, changes: FieldChange[]): Promise<boolean> {
  for (const change of changes) if (change.added.length > 0 && (await addedValues(db, change)).size > 0) return true;
  return false;
}

async function publish(db: PoolClient, options: { defer?: boolean; staged?: AddedValues }): Promise<Published> {
  // One publisher at a time: the state row is the lock.
  const state = await db.query<{ checked_generation: string }>('SELECT checked_generation FROM synchro.manifest_state FOR UPDATE');
  const gen = await db.query<{ g: string }>('SELECT coalesce(max(generation), 0) g FROM synchro.registry_generations');
  const generation = Number(gen.rows[0]?.g ?? 0);
  const tables = await loadTables(db);
  const history = new Map<number, Manifest>();
  for (const r of (await db.query<ManifestRow>('SELECT * FROM synchro.manifests ORDER BY schema_version')).rows) {
    const m = toManifest(r);
    history.set(m.version, m);
  }
  for (const r of (await db.query<{ schema_version: string; scope_id: string }>('SELECT schema_version, scope_id FROM synchro.manifest_affected_scopes ORDER BY scope_id COLLATE "C"')).rows) {
    history.get(Number(r.schema_version))?.affectedScopes.push(r.scope_id);
  }
  let current = [...history.values()].at(-1);
  const tableBodies = [...tables.values()].map(manifestTable).sort((a, b) => utf8Order(String(a.table_id), String(b.table_id)));
  const unchanged = current !== undefined && canonicalJson(current.body.tables) === canonicalJson(tableBodies);
  if (current === undefined || (!unchanged && Number(state.rows[0]?.checked_generation) !== generation)) {
    const version = (current?.version ?? 0) + 1;
    let cls: string = current === undefined ? 'initial' : transitionClass(current.body.tables as TableLite[], tableBodies as unknown as TableLite[]);
    const changes = current === undefined ? [] : fieldChanges(current.body.tables as ShapeLite[], tables);
    // Added fields that already hold values need history a live read cannot give consistently: the bootstrap stages it.
    if (current !== undefined && options.defer === true && options.staged === undefined && (await needsHistory(db, changes))) {
      const addedFields = Object.fromEntries(changes.filter((c) => c.added.length > 0).map((c) => [c.table.tableId, c.added]));
      return { catalog: { current, tables: narrowedToManifest(tables, current), history }, generation, due: { registryGeneration: generation, addedFields } };
    }
    // Rows already captured take the new shape in this transaction; added values make the step Class 3.
    const affected = (await reshapeStoredRows(db, changes, options.staged)).sort(utf8Order);
    if (cls === 'class_2' && affected.length > 0) cls = 'class_3';
    const floorOfParent = current === undefined ? version : Number(current.body.compatibility_floor);
    const body: Record<string, unknown> = {
      schema_version: version,
      parent_schema: current === undefined ? null : { version: current.version, hash: current.hash },
      transition_class: cls,
      compatibility_floor: cls === 'class_2' ? floorOfParent : version,
      tables: tableBodies,
    };
    let { hash } = schemaManifestHash(body);
    if (fault('manifest-hash-omits-floor')) ({ hash } = schemaManifestHashUnchecked((({ compatibility_floor: _floor, ...rest }) => rest)(body))); // fault: server:manifest-hash-omits-floor
    body.schema_hash = hash;
    const text = canonicalJson(body);
    await db.query(
      `INSERT INTO synchro.manifests (schema_version, schema_hash, registry_generation, parent_version, parent_hash,
         transition_class, compatibility_floor, body_text) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
      [version, hash, generation, current?.version ?? null, current?.hash ?? null, cls, body.compatibility_floor, text],
    );
    if (cls === 'class_3' && !fault('scope006-manifest-without-affected-scopes')) { // fault: server:scope006-manifest-without-affected-scopes
      for (const scope of affected) await db.query('INSERT INTO synchro.manifest_affected_scopes (schema_version, scope_id) VALUES ($1, $2)', [version, scope]);
    }
    current = {
      version,
      hash,
      transitionClass: cls,
      parent: current === undefined ? null : { version: current.version, hash: current.hash },
      affectedScopes: cls === 'class_3' ? affected : [],
      text,
      body,
    };
    history.set(version, current);
  }
  await db.query('UPDATE synchro.manifest_state SET checked_generation = $1', [generation]);
  return { catalog: { current, tables, history }, generation };
}
