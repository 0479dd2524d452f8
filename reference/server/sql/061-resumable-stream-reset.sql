-- Resumable operator stream reset (reference/server/capture/stream-reset.ts).
-- The reset runs as durable phases: preparing (candidate slot created over the
-- replication protocol, its snapshot exported), baseline_staged (the snapshot's
-- rows copied into synchro.reset_staged_rows, apart from the live projection),
-- catching_up (the candidate slot's transactions after the consistent point
-- applied to the staged rows), then one activation commit. Each phase is a
-- commit of this record, so an operator session that dies leaves a record that
-- says where to resume.
ALTER TABLE synchro.stream_resets DROP CONSTRAINT stream_resets_lifecycle_check;
ALTER TABLE synchro.stream_resets ADD CONSTRAINT stream_resets_lifecycle_check
  CHECK (lifecycle IN ('preparing', 'baseline_staged', 'catching_up', 'activated', 'aborted'));
ALTER TABLE synchro.stream_resets
  -- The database and the command that created the candidate slot, as the operator ran them.
  ADD COLUMN database_name text,
  ADD COLUMN slot_created_by text,
  -- pg_current_snapshot() of the imported snapshot: which transactions the baseline holds.
  ADD COLUMN snapshot_boundary text,
  -- The end of the last candidate-slot transaction applied to the staged rows (or the flush position a complete catch-up reached).
  ADD COLUMN caught_up_end_lsn pg_lsn,
  -- Why the last activation attempt was refused, if it was.
  ADD COLUMN last_refusal text;
DROP INDEX synchro.stream_resets_one_in_flight;
CREATE UNIQUE INDEX stream_resets_one_in_flight ON synchro.stream_resets ((true)) WHERE lifecycle IN ('preparing', 'baseline_staged', 'catching_up');

-- The staged baseline of a reset: the final state of each registered row in the
-- snapshot, then as the candidate slot's transactions left it. A deleted row keeps
-- its deletion version with no image. Kept after activation for inspection.
CREATE TABLE synchro.reset_staged_rows (
  reset_id uuid NOT NULL REFERENCES synchro.stream_resets (reset_id) ON DELETE CASCADE,
  table_id text NOT NULL,
  pk_text text NOT NULL,
  row_image jsonb,
  server_version text NOT NULL,
  state text NOT NULL CHECK (state IN ('live', 'deleted')),
  -- 'snapshot' when the imported snapshot held it last, else the commit of the candidate-slot transaction that did.
  staged_from text NOT NULL,
  PRIMARY KEY (reset_id, table_id, pk_text),
  CHECK ((row_image IS NULL) = (state = 'deleted'))
);
REVOKE ALL ON synchro.reset_staged_rows FROM PUBLIC;
