-- Readiness checks the capture worker's principal (SYNC-OPS-002, decision 352).
--
-- The deployment names the worker login of a database in the setting
-- synchro.worker_login (the 005 sheet's setting; the reference's provisioning
-- sets it per database with ALTER DATABASE … SET). When it is set, the
-- `worker` check also requires:
--   * that login to exist with LOGIN REPLICATION NOINHERIT and no superuser,
--     CREATEDB, CREATEROLE or BYPASSRLS, and to be a member of synchro_worker
--     and of nothing else;
--   * every capture session of this database (the worker's SQL, slot and
--     listening sessions), and whatever session holds the active slot, to run
--     as it;
--   * no other non-superuser login with REPLICATION. A login another database
--     of the cluster names as its own worker login is that database's
--     principal, not a second one of this database: a cluster shared by
--     several configured databases (the harness runs one per scenario) has one
--     worker login each.
-- Unset, the worker runs on the server's own session (a reference started
-- without a worker login) and the check is what it was before.

CREATE FUNCTION synchro.worker_principal_valid() RETURNS boolean
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, synchro AS $$
  WITH configured AS (SELECT nullif(current_setting('synchro.worker_login', true), '') AS login),
  worker AS (
    SELECT r.oid, r.rolname FROM pg_roles r, configured c
     WHERE r.rolname = c.login AND r.rolcanlogin AND r.rolreplication AND NOT r.rolinherit
       AND NOT r.rolsuper AND NOT r.rolcreatedb AND NOT r.rolcreaterole AND NOT r.rolbypassrls
       AND ARRAY(SELECT g.rolname::text FROM pg_auth_members m JOIN pg_roles g ON g.oid = m.roleid WHERE m.member = r.oid) = ARRAY['synchro_worker'])
  SELECT (SELECT login FROM configured) IS NULL OR (
    EXISTS (SELECT 1 FROM worker)
    AND NOT EXISTS (
      SELECT 1 FROM pg_stat_activity a
       WHERE a.datname = current_database() AND a.application_name IN ('synchro-capture', 'synchro-capture-slot', 'synchro-capture-listen')
         AND a.usename IS DISTINCT FROM (SELECT rolname FROM worker))
    AND NOT EXISTS (
      SELECT 1 FROM pg_replication_slots s JOIN pg_stat_activity a ON a.pid = s.active_pid
       WHERE s.slot_name = (SELECT slot_name FROM synchro.wal_progress) AND a.usename IS DISTINCT FROM (SELECT rolname FROM worker))
    AND NOT EXISTS (
      SELECT 1 FROM pg_roles o
       WHERE o.rolcanlogin AND o.rolreplication AND NOT o.rolsuper AND o.rolname <> (SELECT rolname FROM worker)
         AND NOT EXISTS (
           SELECT 1 FROM pg_db_role_setting s JOIN pg_database d ON d.oid = s.setdatabase
            WHERE s.setrole = 0 AND d.datname <> current_database() AND ('synchro.worker_login=' || o.rolname) = ANY (s.setconfig))))
$$;
REVOKE EXECUTE ON FUNCTION synchro.worker_principal_valid() FROM PUBLIC;

-- The worker check of 008's capture health, with the principal added; the rest is unchanged.
CREATE OR REPLACE FUNCTION synchro.capture_health() RETURNS jsonb
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, synchro AS $$
DECLARE
  ok constant jsonb := jsonb_build_object('state', 'ok', 'reason', 'ok');
  v_checks jsonb := '{}'::jsonb;
  v_lim record;
  v_prog record;
  v_slot record;
  v_slot_before pg_lsn;
  v_worker record;
  v_hb_age double precision;
  v_lag_bytes numeric;
  v_lag_seconds double precision;
  v_bad boolean;
  f constant text := 'failed';
BEGIN
  -- A limit that is unset or does not read as a finite positive number is NULL here, and its check fails.
  SELECT synchro.positive_limit(max_heartbeat_age_seconds) AS max_heartbeat_age_seconds, synchro.positive_limit(max_wal_lag_bytes) AS max_wal_lag_bytes,
         synchro.positive_limit(max_wal_lag_seconds) AS max_wal_lag_seconds
    INTO v_lim FROM synchro.capture_limits;
  -- The slot's position lives in shared memory and moves while this runs; the
  -- progress row is read from a snapshot. The worker keeps, at every instant,
  -- acknowledged <= slot position <= processed, and all three only grow, so the
  -- slot is read once before the progress row (a lower bound of its position
  -- then) and once after (an upper bound). VOLATILE gives each statement its own
  -- snapshot, so the progress row is not older than the first slot read.
  SELECT s.confirmed_flush_lsn INTO v_slot_before FROM pg_replication_slots s
   WHERE s.slot_name = (SELECT slot_name FROM synchro.wal_progress);
  SELECT * INTO v_prog FROM synchro.wal_progress;
  SELECT s.* INTO v_slot FROM pg_replication_slots s WHERE s.slot_name = v_prog.slot_name;
  SELECT * INTO v_worker FROM synchro.wal_worker_state;

  -- Publication: exactly the active registered relations, whole rows, no filters.
  SELECT EXISTS (
      SELECT physical_relation_oid FROM synchro.relations WHERE active
      EXCEPT SELECT prrelid FROM pg_publication_rel pr JOIN pg_publication p ON p.oid = pr.prpubid WHERE p.pubname = 'synchro_capture')
    OR EXISTS (
      SELECT prrelid FROM pg_publication_rel pr JOIN pg_publication p ON p.oid = pr.prpubid WHERE p.pubname = 'synchro_capture'
      EXCEPT SELECT physical_relation_oid FROM synchro.relations WHERE active)
    OR EXISTS (SELECT 1 FROM pg_publication_rel pr JOIN pg_publication p ON p.oid = pr.prpubid
                WHERE p.pubname = 'synchro_capture' AND (pr.prqual IS NOT NULL OR pr.prattrs IS NOT NULL))
    OR NOT EXISTS (SELECT 1 FROM pg_publication WHERE pubname = 'synchro_capture' AND pubinsert AND pubupdate AND pubdelete AND NOT puballtables)
    INTO v_bad;
  v_checks := v_checks || jsonb_build_object('publication', CASE WHEN v_bad
    THEN jsonb_build_object('state', f, 'reason', 'publication_mismatch') ELSE ok END);

  v_checks := v_checks || jsonb_build_object('replication_slot', CASE
    WHEN v_prog IS NULL OR v_slot IS NULL OR v_slot.plugin IS DISTINCT FROM 'pgoutput' OR v_slot.temporary
      OR v_slot.slot_type <> 'logical' OR v_slot.database IS DISTINCT FROM current_database() OR v_slot.wal_status = 'lost'
      OR v_slot.invalidation_reason IS NOT NULL
      THEN jsonb_build_object('state', f, 'reason', 'replication_slot_invalid') ELSE ok END);

  -- A reset that has started but not activated leaves the old stream blocked.
  v_checks := v_checks || jsonb_build_object('stream_reset', CASE
    WHEN v_prog IS NULL THEN jsonb_build_object('state', 'unknown', 'reason', 'health_query_unavailable')
    WHEN EXISTS (SELECT 1 FROM synchro.stream_resets WHERE lifecycle IN ('preparing', 'baseline_staged', 'catching_up'))
      THEN jsonb_build_object('state', f, 'reason', 'stream_reset_incomplete')
    ELSE ok END);

  v_checks := v_checks || jsonb_build_object('poison', CASE
    WHEN EXISTS (SELECT 1 FROM synchro.wal_poison WHERE lifecycle = 'active')
      THEN jsonb_build_object('state', f, 'reason', 'blocking_poison') ELSE ok END);

  v_checks := v_checks || jsonb_build_object('materialization_progress', CASE
    WHEN v_prog IS NULL OR v_slot IS NULL OR v_slot.confirmed_flush_lsn IS NULL OR v_prog.acknowledged_end_lsn IS NULL
      OR v_slot.confirmed_flush_lsn < v_prog.acknowledged_end_lsn OR v_slot_before > v_prog.processed_end_lsn
      OR (v_prog.materialized_end_lsn IS NOT NULL AND v_prog.materialized_end_lsn > v_prog.processed_end_lsn)
      THEN jsonb_build_object('state', f, 'reason', 'slot_acknowledgement_invalid') ELSE ok END);

  v_checks := v_checks || jsonb_build_object('worker', CASE
    WHEN v_worker IS NULL OR v_worker.state NOT IN ('running', 'blocked')
      OR NOT EXISTS (SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'synchro-capture')
      THEN jsonb_build_object('state', f, 'reason', 'worker_state_invalid')
    -- The configured worker login, its attributes and membership, and the sole replication principal (084).
    WHEN NOT synchro.worker_principal_valid() THEN jsonb_build_object('state', f, 'reason', 'worker_identity_invalid')
    ELSE ok END);

  -- The server's clock (054-readiness-clock-and-progress.sql), so a moved clock ages what the database stamped.
  v_hb_age := extract(epoch FROM synchro.server_now() - v_worker.heartbeat_at);
  v_checks := v_checks || jsonb_build_object('heartbeat', CASE
    WHEN coalesce(v_lim.max_heartbeat_age_seconds, 0) <= 0 THEN jsonb_build_object('state', f, 'reason', 'invalid_limit')
    -- A heartbeat dated after now is as untrustworthy as a stale one.
    WHEN v_hb_age IS NULL OR v_hb_age < 0 OR v_hb_age > v_lim.max_heartbeat_age_seconds THEN jsonb_build_object('state', f, 'reason', 'heartbeat_stale')
    ELSE ok END);

  v_lag_bytes := pg_wal_lsn_diff(pg_current_wal_lsn(), v_slot.confirmed_flush_lsn);
  v_checks := v_checks || jsonb_build_object('wal_byte_lag', CASE
    WHEN coalesce(v_lim.max_wal_lag_bytes, 0) <= 0 THEN jsonb_build_object('state', f, 'reason', 'invalid_limit')
    WHEN v_lag_bytes IS NULL OR v_lag_bytes > v_lim.max_wal_lag_bytes THEN jsonb_build_object('state', f, 'reason', 'wal_lag_exceeded')
    ELSE ok END);

  -- Approximation: unmaterialized WAL is as old as the worker's last caught-up moment.
  -- Behind an active poison the age of the oldest unmaterialized commit is not known: NULL, never 0.
  v_lag_seconds := CASE WHEN v_lag_bytes IS NULL OR EXISTS (SELECT 1 FROM synchro.wal_poison WHERE lifecycle = 'active') THEN NULL
    WHEN v_lag_bytes <= 0 THEN 0
    ELSE extract(epoch FROM synchro.server_now() - v_worker.caught_up_at) END;
  v_checks := v_checks || jsonb_build_object('wal_time_lag', CASE
    WHEN coalesce(v_lim.max_wal_lag_seconds, 0) <= 0 THEN jsonb_build_object('state', f, 'reason', 'invalid_limit')
    WHEN v_lag_seconds IS NULL OR v_lag_seconds > v_lim.max_wal_lag_seconds THEN jsonb_build_object('state', f, 'reason', 'wal_lag_exceeded')
    ELSE ok END);

  RETURN jsonb_build_object('checks', v_checks, 'observations', jsonb_build_object(
    'heartbeat_age_seconds', v_hb_age, 'wal_lag_bytes', v_lag_bytes, 'wal_lag_seconds', v_lag_seconds));
END
$$;

-- The sheet's name of the worker's progress table (synchro.wal_progress here),
-- for the worker group only: what a worker login reaches after SET ROLE.
CREATE VIEW synchro.sync_wal_progress AS SELECT * FROM synchro.wal_progress;
REVOKE ALL ON synchro.sync_wal_progress FROM PUBLIC;
GRANT SELECT ON synchro.sync_wal_progress TO synchro_worker;
