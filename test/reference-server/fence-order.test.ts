/**
 * The capture fence's order check (SYNC-CAP-012, decision 429): a fence that
 * fires after a nested statement already changed its row, and after that
 * nested change's own fence, fails with 27000; every other sequence of writes
 * to one row in one transaction passes. The fence looks the row up only when
 * an earlier fence of the same transaction wrote the identity's version
 * record, and compares the row's command ID with that record's.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { freshServer, type Harness, useEnv } from './helpers.ts';

const env = useEnv();

const SETUP = `
CREATE TABLE public.items (id text PRIMARY KEY, label text NOT NULL);
SELECT synchro.synchro_register_table('public.items');
INSERT INTO public.items VALUES ('t-1', 'v0'), ('t-2', 'v0'), ('t-3', 'v0');
-- Touches the triggering row once more, from a nested statement.
CREATE FUNCTION public.touch_again() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF pg_trigger_depth() = 1 THEN UPDATE public.items SET label = label || '!' WHERE id = NEW.id; END IF;
  RETURN NULL;
END $$;
-- Deletes the triggering row from a nested statement.
CREATE FUNCTION public.delete_again() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF pg_trigger_depth() = 1 THEN DELETE FROM public.items WHERE id = NEW.id; END IF;
  RETURN NULL;
END $$;
-- Called for one row, changes another row of the same relation.
CREATE FUNCTION public.label_touching(p_id text, p_other text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
  IF p_id <> p_other THEN UPDATE public.items SET label = 'from ' || p_id WHERE id = p_other; END IF;
  RETURN 'set';
END $$;
`;

/** Runs `sql` in a transaction that is rolled back either way; answers the SQLSTATE it failed with, or 'ok'. */
async function outcome(h: Harness, sql: string): Promise<string> {
  await h.sql.query('BEGIN');
  try {
    await h.sql.query(sql);
    return 'ok';
  } catch (e) {
    return (e as { code?: string }).code ?? 'no code';
  } finally {
    await h.sql.query('ROLLBACK');
  }
}

/** How many version records changed in a transaction that runs `sql` and is committed. */
async function versionsMoved(h: Harness, sql: string, ids: string[]): Promise<number> {
  const read = async () => (await h.sql.query<{ v: string }>("SELECT string_agg(server_version, ',' ORDER BY pk_text) AS v FROM synchro.row_versions WHERE pk_text = ANY ($1)", [ids])).rows[0]?.v;
  const before = await read();
  await h.sql.query(`BEGIN; ${sql}; COMMIT`);
  const after = await read();
  return (before ?? '').split(',').filter((v, k) => v !== (after ?? '').split(',')[k]).length;
}

test('a nested change that the outer change fence fires after fails with 27000; every other order of writes to a row passes', async () => {
  const h = await freshServer(env(), SETUP);
  try {
    // A trigger sorted before the fence changes the row again: the nested change is fenced first,
    // then the outer change's fence finds its version already overwritten.
    await h.sql.query('CREATE TRIGGER aaa_touch AFTER UPDATE ON public.items FOR EACH ROW EXECUTE FUNCTION public.touch_again()');
    assert.equal(await outcome(h, "UPDATE public.items SET label = 'nested' WHERE id = 't-1'"), '27000', 'one row');
    assert.equal(await outcome(h, "UPDATE public.items SET label = 'nested'"), '27000', 'every row');
    assert.equal(await outcome(h, "UPDATE public.items SET label = 'first' WHERE id = 't-2'; SAVEPOINT s; UPDATE public.items SET label = 'nested' WHERE id = 't-1'"), '27000', 'after another row was fenced');
    await h.sql.query('DROP TRIGGER aaa_touch ON public.items');

    // A trigger sorted after the fence: the outer change is fenced before the nested one happens.
    await h.sql.query('CREATE TRIGGER zzz_touch AFTER UPDATE ON public.items FOR EACH ROW EXECUTE FUNCTION public.touch_again()');
    assert.equal(await outcome(h, "UPDATE public.items SET label = 'nested' WHERE id = 't-1'"), 'ok', 'nested after the fence, one row');
    assert.equal(await outcome(h, "UPDATE public.items SET label = 'nested'"), 'ok', 'nested after the fence, every row');
    await h.sql.query('DROP TRIGGER zzz_touch ON public.items');

    // Statements one after another, any number of times per row, with or without a rolled-back part.
    assert.equal(await outcome(h, "UPDATE public.items SET label = 'a' WHERE id = 't-1'; UPDATE public.items SET label = 'b' WHERE id = 't-1'; UPDATE public.items SET label = 'c' WHERE id = 't-1'"), 'ok', 'three updates');
    assert.equal(await outcome(h, "UPDATE public.items SET label = 'a'; UPDATE public.items SET label = 'b' WHERE id = 't-3'; DELETE FROM public.items WHERE id = 't-2'"), 'ok', 'every row, then one, then a delete');
    assert.equal(await outcome(h, "UPDATE public.items SET label = 'a' WHERE id = 't-1'; SAVEPOINT s; UPDATE public.items SET label = 'b' WHERE id = 't-1'; ROLLBACK TO SAVEPOINT s; UPDATE public.items SET label = 'c' WHERE id = 't-1'"), 'ok', 'a rolled-back update between two');
    assert.equal(await outcome(h, "INSERT INTO public.items VALUES ('t-4', 'new'); UPDATE public.items SET label = 'changed' WHERE id = 't-4'"), 'ok', 'insert then update');

    // A function in the statement changes a row the same statement already changed: that change's
    // fence fires first, inside the statement, and the statement's own fence for the row comes after.
    const order = (await h.sql.query<{ id: string }>('SELECT id FROM public.items ORDER BY ctid')).rows.map((r) => r.id);
    const [first, second] = order;
    assert.equal(await outcome(h, `UPDATE public.items SET label = public.label_touching(id, '${first}')`), '27000', `a function called for ${second} changes ${first}`);

    // A nested delete of the row leaves nothing to compare with; the outer live version is then a revival.
    await h.sql.query('CREATE TRIGGER aaa_delete AFTER UPDATE ON public.items FOR EACH ROW EXECUTE FUNCTION public.delete_again()');
    assert.equal(await outcome(h, "UPDATE public.items SET label = 'gone' WHERE id = 't-1'"), '23514', 'nested delete before the fence');
    await h.sql.query('DROP TRIGGER aaa_delete ON public.items');

    // Committed: each write moved its row's version, and nothing else changed it.
    assert.equal(await versionsMoved(h, "UPDATE public.items SET label = 'x' WHERE id = 't-1'; UPDATE public.items SET label = 'y' WHERE id = 't-1'", ['t-1', 't-2']), 1);
    assert.equal(await versionsMoved(h, "UPDATE public.items SET label = 'z'", ['t-1', 't-2', 't-3']), 3);
  } finally {
    await h.close();
  }
});

test('a version record takes 1 to 64 printable ASCII characters other than the double quote and the backslash as its version', async () => {
  const h = await freshServer(env(), SETUP);
  try {
    const stored = async (version: string) => {
      await h.sql.query('SAVEPOINT v');
      try {
        await h.sql.query("UPDATE synchro.row_versions SET server_version = $1 WHERE pk_text = 't-1'", [version]);
        await h.sql.query('RELEASE SAVEPOINT v');
        return 'ok';
      } catch (e) {
        await h.sql.query('ROLLBACK TO SAVEPOINT v');
        return (e as { code?: string }).code ?? 'no code';
      }
    };
    await h.sql.query('BEGIN');
    try {
      for (const good of [' ', '!', '#', '[', ']', '~', 'v0123456789abcdef', '~'.repeat(64)]) assert.equal(await stored(good), 'ok', JSON.stringify(good));
      for (const bad of ['', '"', '\\', 'a"b', 'a\\b', 'x'.repeat(65), 'é', 'a\nb', '\u007f', 'tab\there']) assert.equal(await stored(bad), '23514', JSON.stringify(bad));
    } finally {
      await h.sql.query('ROLLBACK');
    }
  } finally {
    await h.close();
  }
});
