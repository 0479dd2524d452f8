/**
 * Steps only SYNC-SCHEMA-006 (Scope Local Compaction) uses: pulls that check
 * which recorded cursors still resume after compaction, a scope no client is
 * assigned, the floor against the durable high-watermark, and a compaction
 * whose floor update fails (a trigger the operator puts on the floor update,
 * as the 004 sheet's check has it) leaving effects and floor as they were.
 */
import { Given, Then, When } from '@cucumber/cucumber';
import { inspectOf, listedIds, pullPresenting, upsertsOf } from '../support/retention/history.ts';
import { generationsState } from '../support/scope-generations/state.ts';
import type { SyncWorld } from '../support/world.ts';

/** The one scope a cursor label was recorded for. */
function scopeOfLabel(world: SyncWorld, label: string): string {
  const scopes = [...(generationsState(world).cursors.get(label)?.keys() ?? [])];
  if (scopes.length !== 1) throw new Error(`cursor label "${label}" names ${scopes.length} scopes, not one`);
  return scopes[0] as string;
}

Then('a pull by {string} presenting {string} lists {string} in {string}', async function (this: SyncWorld, name: string, label: string, scope: string, member: string) {
  if (scopeOfLabel(this, label) !== scope) throw new Error(`cursor "${label}" was not recorded for ${scope}`);
  const reply = await pullPresenting(this, name, { [scope]: label });
  this.assert.equal(reply.status, 200, `the pull presenting ${label} was answered ${reply.status}: ${reply.text.slice(0, 500)}`);
  this.assert.ok(((reply.json?.[member] ?? []) as unknown[]).includes(scope), `member "${member}" of the pull presenting ${label} does not list ${scope}: ${reply.text.slice(0, 500)}`);
});

Then(/^a pull by "([^"]+)" presenting "([^"]+)" is served incrementally with exactly the upserts of ("[^"]+"(?: (?:and|to) "[^"]+")?)$/, async function (this: SyncWorld, name: string, label: string, ids: string) {
  const scope = scopeOfLabel(this, label);
  const reply = await pullPresenting(this, name, { [scope]: label });
  this.assert.equal(reply.status, 200, `the pull presenting ${label} was answered ${reply.status}: ${reply.text.slice(0, 500)}`);
  this.assert.equal(reply.json.rebuild, [], `member "rebuild" of the pull presenting ${label}: ${reply.text.slice(0, 500)}`);
  const listed = upsertsOf(reply).filter((c) => c.startsWith(`${scope} `));
  this.assert.equal(listed, listedIds(ids).map((id) => `${scope} upsert ${id}`), `the changes of ${scope} served after ${label}: ${reply.text.slice(0, 1500)}`);
});

Then('the harness client {string} is expired', async function (this: SyncWorld, name: string) {
  const reply = await this.wire(name).pull();
  this.assert.equal(reply.status, 409, `a pull of client "${name}" was answered ${reply.status}: ${reply.text.slice(0, 300)}`);
  this.assert.equal((reply.json?.error as Record<string, unknown> | undefined)?.code, 'client_generation_expired', `the error code of the pull of client "${name}"`);
});

Given('no client is assigned scope {string}', async function (this: SyncWorld, scope: string) {
  const rows = await (await inspectOf(this)).query<{ n: string }>('SELECT count(*)::text AS n FROM synchro.client_scopes WHERE scope_id = $1 AND assigned', [scope]);
  if (Number(rows[0]?.n) !== 0) throw new Error(`${rows[0]?.n} clients are assigned ${scope}`);
});

type FloorAndMark = {
  floor: string | null;
  mark: string | null;
};

async function floorAndMark(world: SyncWorld, scope: string): Promise<FloorAndMark> {
  const rows = await (await inspectOf(world)).query<FloorAndMark>(
    `SELECT (SELECT s.floor_commit_lsn::text || '/' || coalesce(s.floor_event_ordinal::text, 'end') || '/' || coalesce(s.floor_effect_ordinal::text, 'end')
               FROM synchro.scope_state s WHERE s.scope_id = $1) AS floor,
            (SELECT h.commit_lsn::text || '/' || h.event_ordinal::text || '/' || h.effect_ordinal::text
               FROM synchro.scope_high_watermarks h JOIN synchro.wal_progress w ON w.stream_generation = h.stream_generation WHERE h.scope_id = $1) AS mark`,
    [scope],
  );
  return rows[0] ?? { floor: null, mark: null };
}

Then('server inspection shows the resume floor of {string} equal to its durable high-watermark', async function (this: SyncWorld, scope: string) {
  const { floor, mark } = await floorAndMark(this, scope);
  this.assert.ok(mark !== null, `the server keeps no high-watermark for ${scope}`);
  this.assert.equal(floor, mark, `the resume floor of ${scope} against its high-watermark`);
});

// The floor-update failure scenario: what inspection showed before, and the compaction's outcome.

type Recorded = {
  effects: string[];
  floor: string | null;
};
const recorded = new WeakMap<SyncWorld, Map<string, Recorded>>();
const compactions = new WeakMap<SyncWorld, { failed: boolean; detail: string }>();

async function retained(world: SyncWorld, scope: string): Promise<Recorded> {
  const effects = await (await inspectOf(world)).query<{ p: string }>(
    "SELECT commit_lsn::text || '/' || event_ordinal || '/' || effect_ordinal || ' ' || pk_text AS p FROM synchro.scope_effects WHERE scope_id = $1 ORDER BY commit_lsn, event_ordinal, effect_ordinal",
    [scope],
  );
  return { effects: effects.map((e) => e.p), floor: (await floorAndMark(world, scope)).floor };
}

Given('the harness has recorded the retained effects and the resume floor of {string} through server inspection', async function (this: SyncWorld, scope: string) {
  const now = await retained(this, scope);
  if (now.effects.length === 0) throw new Error(`${scope} retains no effect to record`);
  recorded.set(this, new Map([...(recorded.get(this) ?? []), [scope, now]]));
});

Given('the operator arms a fault that makes the floor update of {string} fail', async function (this: SyncWorld, scope: string) {
  const server = await this.readyServer();
  if (!server.provision) throw new Error(`server adapter "${server.id}" has no provision capability to put a trigger on the floor update`);
  const literal = `'${scope.replaceAll("'", "''")}'`;
  await server.provision.exec(`
    CREATE FUNCTION public.refuse_floor_update() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN RAISE EXCEPTION 'the floor update of % is refused by the scenario', NEW.scope_id; END $$;
    CREATE TRIGGER refuse_floor_update BEFORE INSERT OR UPDATE ON synchro.scope_state
      FOR EACH ROW WHEN (NEW.scope_id = ${literal}) EXECUTE FUNCTION public.refuse_floor_update();`);
});

When('the operator attempts to compact scope {string}', async function (this: SyncWorld, _scope: string) {
  const server = await this.readyServer();
  if (!server.compaction) throw new Error(`server adapter "${server.id}" offers no compaction control`);
  try {
    const result = await server.compaction.compact();
    compactions.set(this, { failed: false, detail: JSON.stringify(result) });
  } catch (error) {
    compactions.set(this, { failed: true, detail: (error as Error).message });
  }
});

Then('the compaction reports a failure', function (this: SyncWorld) {
  const outcome = compactions.get(this);
  if (outcome === undefined) throw new Error('no compaction was attempted in this scenario');
  this.assert.ok(outcome.failed, `the compaction reported success: ${outcome.detail.slice(0, 500)}`);
});

Then('server inspection shows the same retained effects and the same resume floor for {string} as recorded', async function (this: SyncWorld, scope: string) {
  const before = recorded.get(this)?.get(scope);
  if (before === undefined) throw new Error(`the retained effects of ${scope} were not recorded earlier`);
  this.assert.equal(await retained(this, scope), before, `the retained effects and resume floor of ${scope}`);
});

Given(
  'the harness client {string} has pulled presenting cursor {string} for scope {string} and then pulled presenting the returned cursor, which stands after {string}',
  async function (this: SyncWorld, name: string, label: string, scope: string, last: string) {
    const first = await pullPresenting(this, name, { [scope]: label });
    if (first.status !== 200) throw new Error(`the pull presenting ${label} was answered ${first.status}: ${first.text.slice(0, 500)}`);
    const served = upsertsOf(first).filter((c) => c.startsWith(`${scope} `));
    if (served[served.length - 1] !== `${scope} upsert ${last}` || first.json.has_more !== false) throw new Error(`the pull presenting ${label} did not end at ${last}: ${first.text.slice(0, 800)}`);
    const second = await this.wire(name).pull();
    if (second.status !== 200) throw new Error(`the pull presenting the returned cursor was answered ${second.status}: ${second.text.slice(0, 500)}`);
  },
);
