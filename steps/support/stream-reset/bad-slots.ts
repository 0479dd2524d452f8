/**
 * Candidate slots a reset must refuse to activate that only a cluster of the
 * scenario's own can make without touching other scenarios (SYNC-CAP-007):
 * a slot of the candidate's name in another database of the cluster, and one
 * PostgreSQL itself invalidated. Both use `database.*` members, offered only
 * to a scenario given a cluster of its own; without them the scenario is
 * undetermined.
 */
import type { DatabaseCrashControl, SourceSqlControl } from '../../../harness/adapters/server.ts';
import { undeterminedWithout } from '../optional-controls.ts';
import type { SyncWorld } from '../world.ts';
import { waitUntil } from './operator.ts';

/** The database beside the server's in which the harness creates the wrong-database slot. */
const OTHER_DATABASE = 'synchro_harness_other';

async function ownCluster(world: SyncWorld, why: string): Promise<{ source: SourceSqlControl; cluster: DatabaseCrashControl } | 'skipped'> {
  const server = await world.readyServer();
  if (!server.sourceSql) throw new Error(`server adapter "${server.id}" has no sourceSql capability to replace the candidate slot`);
  if (server.database === undefined) return undeterminedWithout(world, `server adapter "${server.id}" gives the scenario no cluster of its own (database.*) to ${why}`);
  return { source: server.sourceSql, cluster: server.database };
}

/** Drops the candidate slot and creates a permanent pgoutput slot of its name in another database of the cluster. */
export async function slotInOtherDatabase(world: SyncWorld, slot: string): Promise<'skipped' | undefined> {
  const own = await ownCluster(world, 'create a slot of the candidate name in another database');
  if (own === 'skipped') return own;
  if (own.cluster.sessionInOtherDatabase === undefined) return undeterminedWithout(world, 'the server adapter offers no database.sessionInOtherDatabase() to reach another database of the cluster');
  await own.source.query('SELECT pg_drop_replication_slot($1)', [slot]);
  const other = await own.cluster.sessionInOtherDatabase(OTHER_DATABASE);
  try {
    await other.query("SELECT pg_create_logical_replication_slot($1, 'pgoutput')", [slot]);
  } finally {
    await other.close();
  }
  const [made] = await own.source.query<{ database: string; plugin: string; temporary: boolean }>('SELECT database, plugin, temporary FROM pg_replication_slots WHERE slot_name = $1', [slot]);
  if (made?.database !== OTHER_DATABASE || made.plugin !== 'pgoutput' || made.temporary) throw new Error(`the replacement slot ${slot} is not a permanent pgoutput slot of ${OTHER_DATABASE}: ${JSON.stringify(made)}`);
  return undefined;
}

/**
 * Drops the candidate slot, creates a permanent pgoutput slot of its name,
 * and lets PostgreSQL invalidate it: with `idle_replication_slot_timeout` at
 * one second, a checkpoint invalidates every slot idle for longer. The old
 * stream's slot is read (peeked, nothing consumed) just before that
 * checkpoint, so only the replacement has been idle that long (on a machine
 * so loaded that the checkpoint comes a second later, the old slot goes too:
 * the scenario says so in a note, and its checks still hold, since they judge
 * the candidate). The setting is taken back afterwards.
 */
export async function invalidateIdleSlot(world: SyncWorld, slot: string): Promise<'skipped' | undefined> {
  const own = await ownCluster(world, 'change the cluster-wide slot timeout');
  if (own === 'skipped') return own;
  const { source } = own;
  await source.query('SELECT pg_drop_replication_slot($1)', [slot]);
  await source.query("SELECT pg_create_logical_replication_slot($1, 'pgoutput')", [slot]);
  const [old] = await source.query<{ slot_name: string }>('SELECT slot_name FROM synchro.wal_progress');
  if (old === undefined) throw new Error('server inspection shows no active slot');
  // Written out first, so the checkpoint that invalidates comes right after the old slot was read, with little to write.
  await source.query('CHECKPOINT');
  await source.query("ALTER SYSTEM SET idle_replication_slot_timeout = '1s'");
  await source.query('SELECT pg_reload_conf()');
  try {
    await waitUntil(world, `PostgreSQL reports the replacement slot ${slot} invalidated`, async () => {
      const [idle] = await source.query<{ past: boolean | null }>(
        "SELECT now() - inactive_since > current_setting('idle_replication_slot_timeout')::interval AS past FROM pg_replication_slots WHERE slot_name = $1",
        [slot],
      );
      if (idle?.past !== true) return false;
      const [valid] = await source.query<{ at: string }>('SELECT confirmed_flush_lsn::text AS at FROM pg_replication_slots WHERE slot_name = $1 AND invalidation_reason IS NULL', [old.slot_name]);
      if (valid !== undefined) await source.query("SELECT count(*) FROM pg_logical_slot_peek_binary_changes($1, $2::pg_lsn, NULL, 'proto_version', '1', 'publication_names', 'synchro_capture')", [old.slot_name, valid.at]);
      await source.query('CHECKPOINT');
      const [state] = await source.query<{ reason: string | null }>('SELECT invalidation_reason AS reason FROM pg_replication_slots WHERE slot_name = $1', [slot]);
      return state?.reason !== null && state?.reason !== undefined;
    });
  } finally {
    await source.query('ALTER SYSTEM RESET idle_replication_slot_timeout');
    await source.query('SELECT pg_reload_conf()');
  }
  const [lost] = await source.query<{ wal_status: string; reason: string }>('SELECT wal_status, invalidation_reason AS reason FROM pg_replication_slots WHERE slot_name = $1', [slot]);
  if (lost?.wal_status !== 'lost') throw new Error(`the replacement slot ${slot} is invalidated but not reported lost: ${JSON.stringify(lost)}`);
  const [kept] = await source.query<{ reason: string | null }>('SELECT invalidation_reason AS reason FROM pg_replication_slots WHERE slot_name = $1', [old.slot_name]);
  if (kept?.reason !== null) world.attach(`note: the old stream's slot ${old.slot_name} was invalidated too (${kept?.reason}); the checkpoint came later than the timeout after it was read`, 'text/plain');
  return undefined;
}
