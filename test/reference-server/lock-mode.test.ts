import assert from 'node:assert/strict';
import { test } from 'node:test';
import pg from 'pg';
import { loadTables, type TableDef } from '../../reference/server/core/tables.ts';
import { touchesKeyColumn } from '../../reference/server/push/lock-mode.ts';
import { freshServer, useEnv } from './helpers.ts';

const env = useEnv();

const SETUP = `
CREATE TABLE public.parents (id text PRIMARY KEY, code text, alias text, note text, raw text,
  norm text GENERATED ALWAYS AS (upper(raw)) STORED, other text GENERATED ALWAYS AS (lower(note)) STORED);
CREATE UNIQUE INDEX parents_alias_partial ON public.parents (alias) WHERE alias <> '';
CREATE UNIQUE INDEX parents_note_lower ON public.parents (lower(note));
CREATE UNIQUE INDEX parents_norm_key ON public.parents (norm);
SELECT synchro.synchro_register_table('public.parents');
INSERT INTO public.parents (id, code, alias, note, raw) VALUES ('p-1', 'c1', 'a1', 'x1', 'ab');
CREATE TABLE public.events (id text NOT NULL, ref text, PRIMARY KEY (id)) PARTITION BY RANGE (id);
CREATE TABLE public.events_lo PARTITION OF public.events FOR VALUES FROM (MINVALUE) TO ('e-5');
CREATE TABLE public.events_hi PARTITION OF public.events FOR VALUES FROM ('e-5') TO (MAXVALUE);
CREATE UNIQUE INDEX events_hi_ref ON public.events_hi (ref);
INSERT INTO public.events VALUES ('e-1', 'r1'), ('e-7', 'r7');
`;

test('the first lock is FOR UPDATE exactly when the updated columns reach a key column of the row\'s partition, as the catalog is now', async () => {
  const h = await freshServer(env(), SETUP);
  const db = new pg.Client({ connectionString: h.url });
  await db.connect();
  try {
    const tables = await loadTables(db as unknown as pg.PoolClient);
    const parents = [...tables.values()].find((t) => t.name === 'parents') as TableDef;
    const touches = async (table: TableDef, pk: string, columns: string[]) => {
      await db.query('BEGIN');
      try {
        return await touchesKeyColumn(db as unknown as pg.PoolClient, table, pk, columns);
      } finally {
        await db.query('ROLLBACK');
      }
    };
    assert.equal(await touches(parents, 'p-1', ['alias']), false, 'a partial unique index has no key columns');
    assert.equal(await touches(parents, 'p-1', ['note']), false, 'an expression index has no key columns (and no plain index covers the generated column of note)');
    assert.equal(await touches(parents, 'p-1', ['raw']), true, 'a stored generated key column computed from an assigned column');
    assert.equal(await touches(parents, 'p-1', ['id']), true, 'the primary key');
    assert.equal(await touches(parents, 'p-1', ['code']), false, 'no index on code yet');
    await h.sql.query('CREATE UNIQUE INDEX parents_code_key ON public.parents (code)');
    assert.equal(await touches(parents, 'p-1', ['code']), true, 'an index built after the tables were loaded counts');
    assert.equal(await touches(parents, 'p-1', []), false, 'nothing assigned');
    // A relation that is not registered, read through the same definition shape: only its partitions' indexes count.
    const events = { ...parents, qualified: '"public"."events"', pkColumn: 'id', byId: new Map([[parents.pkFieldId, { ...(parents.byId.get(parents.pkFieldId) as object), sqlType: 'text' }]]) } as unknown as TableDef;
    assert.equal(await touches(events, 'e-1', ['ref']), false, 'events_lo has no unique index on ref');
    assert.equal(await touches(events, 'e-7', ['ref']), true, 'events_hi has one');
  } finally {
    await db.end();
    await h.close();
  }
});
