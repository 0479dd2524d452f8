/**
 * The source-side fixtures of the push-unit scenarios (SYNC-MUT-015):
 * deferred constraint triggers installed on the source database, and the
 * push entry point called inside one source transaction of the harness.
 */
import type { PushEntryResult } from '../../../harness/adapters/server.ts';
import { undeterminedWithout } from '../optional-controls.ts';
import type { Json } from '../wire-client.ts';
import type { SyncWorld } from '../world.ts';

type Obj = Record<string, unknown>;

const IDENT = /^[a-z_][a-z0-9_]*$/;

function ident(name: string): string {
  if (!IDENT.test(name)) throw new Error(`"${name}" is not a plain lowercase SQL identifier`);
  return name;
}

/** The trigger body a phrase of the feature describes, as PL/pgSQL statements run for each row (NEW is the row). */
export function deferredTriggerBody(table: string, behaviour: string): { body: string; events: string; setup?: string } {
  const t = ident(table);
  let match = /^records each firing in table "([^"]+)"$/.exec(behaviour);
  if (match) {
    const log = ident(match[1] as string);
    // The firing number comes from a sequence, which no rollback resets: a firing is seen even when its row is not.
    return { setup: `CREATE TABLE public.${log} (firing bigserial PRIMARY KEY, row_id text NOT NULL); GRANT INSERT ON public.${log} TO PUBLIC; GRANT USAGE ON SEQUENCE public.${log}_firing_seq TO PUBLIC;`, body: `INSERT INTO public.${log} (row_id) VALUES (NEW.id);`, events: 'INSERT OR UPDATE' };
  }
  match = /^raises SQLSTATE "([0-9A-Z]{5})" when a row's name becomes "([^"']+)"$/.exec(behaviour);
  if (match) return { body: `IF NEW.name = '${match[2]}' THEN RAISE EXCEPTION 'deferred check refused %', NEW.id USING ERRCODE = '${match[1]}'; END IF;`, events: 'INSERT OR UPDATE' };
  match = /^, when an item is inserted, sets the name of its list to "([^"']+)"$/.exec(behaviour);
  if (match && t === 'items') return { body: `UPDATE public.lists SET name = '${match[1]}' WHERE id = NEW.list_id;`, events: 'INSERT' };
  if (behaviour === 'upper-cases the name of each inserted or updated row') {
    return { body: `UPDATE public.${t} SET name = upper(name) WHERE id = NEW.id AND name IS DISTINCT FROM upper(name);`, events: 'INSERT OR UPDATE' };
  }
  throw new Error(`no deferred trigger is known for: table "${table}" ${behaviour}`);
}

/** Installs a DEFERRABLE INITIALLY DEFERRED constraint trigger on `table` with the behaviour the phrase names. */
export async function installDeferredTrigger(world: SyncWorld, table: string, behaviour: string): Promise<void> {
  const server = await world.readyServer();
  if (!server.sourceSql) throw new Error(`server adapter "${server.id}" has no sourceSql capability`);
  const { body, events, setup } = deferredTriggerBody(table, behaviour);
  const t = ident(table);
  const n = (triggerCount.get(world) ?? 0) + 1;
  triggerCount.set(world, n);
  await server.sourceSql.query(`${setup ?? ''}
    CREATE FUNCTION public.deferred_check_${n}() RETURNS trigger LANGUAGE plpgsql AS $fn$ BEGIN ${body} RETURN NULL; END $fn$;
    CREATE CONSTRAINT TRIGGER deferred_check_${n} AFTER ${events} ON public.${t} DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION public.deferred_check_${n}();`);
}

const triggerCount = new WeakMap<SyncWorld, number>();

/** What the last call of the push entry point inside a source transaction gave. */
const entryResults = new WeakMap<SyncWorld, PushEntryResult>();

/**
 * Runs `statements` and then the push entry point for client `name` with
 * `mutations` under `batchId`, in one source transaction. Without the
 * adapter's control the step is undetermined.
 */
export async function pushInSourceTransaction(world: SyncWorld, name: string, statements: string, batchId: string, mutations: Json[]): Promise<'skipped' | undefined> {
  const server = await world.readyServer();
  const entry = server.sourceSql?.pushInTransaction;
  if (entry === undefined) return undeterminedWithout(world, `server adapter "${server.id}" offers no push entry point inside a caller's transaction (sourceSql.pushInTransaction)`);
  const client = world.wire(name);
  entryResults.set(world, await entry(statements, client.userId, client.pushBody(mutations, batchId)));
  return undefined;
}

export function lastEntryResult(world: SyncWorld): PushEntryResult {
  const result = entryResults.get(world);
  if (result === undefined) throw new Error('the push entry point was not called inside a source transaction earlier in this scenario');
  return result;
}

export type { Obj };
