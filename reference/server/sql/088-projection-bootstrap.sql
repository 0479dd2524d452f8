-- Causally bound Class 3 projection bootstrap (reference/server/capture/projection-bootstrap.ts).
-- A manifest step that adds fields whose rows already hold values is not
-- published from live rows: a coordinator creates a permanent candidate pgoutput
-- slot with an exported snapshot, stages the added values from that snapshot,
-- replays the candidate slot's later transactions into the staged values up to a
-- barrier the main capture worker has made durable, and activates the manifest,
-- the affected-scope invalidation and the reshaped rows in one commit. Each phase
-- is a commit of this record, so a coordinator killed between phases leaves a
-- record that says how to go on.
CREATE TABLE synchro.projection_bootstraps (
  bootstrap_id uuid PRIMARY KEY,
  -- The registry generation whose manifest step waits for this bootstrap.
  registry_generation bigint NOT NULL,
  -- Field IDs the step adds, per table ID: the values the bootstrap stages.
  added_fields jsonb NOT NULL,
  lifecycle text NOT NULL CHECK (lifecycle IN ('preparing', 'baseline_staged', 'catching_up', 'activated', 'aborted')),
  -- The candidate slot as PostgreSQL described it right after the coordinator created it.
  candidate_slot_name text,
  slot_type text,
  plugin text,
  slot_temporary boolean,
  database_name text,
  slot_created_by text,
  exported_snapshot_name text,
  consistent_point pg_lsn,
  -- pg_current_snapshot() of the imported snapshot: which transactions the staged values hold.
  snapshot_boundary text,
  -- The end of the last candidate-slot position whose transactions are applied to the staged values.
  caught_up_end_lsn pg_lsn,
  -- The main worker's durable processed end the activation was taken at.
  activation_barrier pg_lsn,
  activated_schema_version bigint,
  -- Why the last activation attempt was refused, if it was.
  last_refusal text,
  created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  finished_at timestamptz,
  CHECK (lifecycle <> 'activated' OR (activation_barrier IS NOT NULL AND activated_schema_version IS NOT NULL))
);
CREATE UNIQUE INDEX projection_bootstraps_one_in_flight ON synchro.projection_bootstraps ((true)) WHERE lifecycle IN ('preparing', 'baseline_staged', 'catching_up');

-- The staged values of a bootstrap: the added fields' wire values of each row as
-- the snapshot held them, then as the candidate slot's transactions left them
-- (NULL once the row is deleted). Kept after activation for inspection.
CREATE TABLE synchro.projection_bootstrap_rows (
  bootstrap_id uuid NOT NULL REFERENCES synchro.projection_bootstraps (bootstrap_id) ON DELETE CASCADE,
  table_id text NOT NULL,
  pk_text text NOT NULL,
  added_values jsonb,
  -- 'snapshot' when the imported snapshot held it last, else the commit of the candidate-slot transaction that did.
  staged_from text NOT NULL,
  PRIMARY KEY (bootstrap_id, table_id, pk_text)
);
REVOKE ALL ON synchro.projection_bootstraps FROM PUBLIC;
REVOKE ALL ON synchro.projection_bootstrap_rows FROM PUBLIC;
