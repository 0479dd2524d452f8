-- Per-fence coverage of a stream reset (SYNC-CAP-013; capture/reset-coverage.ts).
--
-- A reset that leaves no accepted write behind must say, for every accepted
-- fence up to its activation barrier, how that fence reached the new stream:
--  * 'reset_baseline': the fence's transaction is visible in the candidate
--    slot's exported snapshot but capture had not materialized it (a push left
--    pending behind a quarantine). The baseline holds its row's final state; the
--    record binds the fence to the reset, the candidate slot, the snapshot
--    boundary and, at activation, the new stream generation.
--  * 'materialized': the fence's transaction came after the snapshot and was
--    applied from the candidate slot's WAL by catch-up.
-- One record per fence and reset; the records of one row are its history, kept
-- apart from the row's projected state in synchro.reset_staged_rows.
CREATE TABLE synchro.reset_fence_coverage (
  reset_id uuid NOT NULL REFERENCES synchro.stream_resets (reset_id) ON DELETE CASCADE,
  fence_id uuid NOT NULL,
  coverage text NOT NULL CHECK (coverage IN ('reset_baseline', 'materialized')),
  table_id text NOT NULL,
  pk_text text NOT NULL,
  server_version text NOT NULL,
  row_state text NOT NULL CHECK (row_state IN ('live', 'deleted')),
  dml_ordinal bigint NOT NULL CHECK (dml_ordinal >= 1),
  registration_kind text NOT NULL CHECK (registration_kind IN ('synced', 'capture_dependency')),
  -- The source transaction that carried the fence: its xid and where it committed.
  source_xid bigint NOT NULL,
  source_commit_lsn pg_lsn NOT NULL,
  candidate_slot_name text NOT NULL,
  consistent_point pg_lsn NOT NULL,
  -- pg_current_snapshot() of the imported snapshot, for baseline coverage.
  snapshot_boundary text,
  -- Set by activation, in the commit that creates the generation.
  target_generation text,
  -- When the staged row of a baseline-covered fence was checked to take its version from a covered fence of that row.
  verified_at timestamptz,
  PRIMARY KEY (reset_id, fence_id)
);
CREATE INDEX reset_fence_coverage_version ON synchro.reset_fence_coverage (server_version);
REVOKE ALL ON synchro.reset_fence_coverage FROM PUBLIC;

-- A coverage record that activation bound to its generation is immutable.
CREATE FUNCTION synchro.reset_fence_coverage_frozen() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, synchro AS $$
BEGIN
  IF OLD.target_generation IS NOT NULL THEN
    RAISE EXCEPTION 'a fence coverage record of an activated reset cannot change' USING ERRCODE = '55000';
  END IF;
  RETURN NEW;
END
$$;
CREATE TRIGGER reset_fence_coverage_frozen BEFORE UPDATE ON synchro.reset_fence_coverage
  FOR EACH ROW EXECUTE FUNCTION synchro.reset_fence_coverage_frozen();
