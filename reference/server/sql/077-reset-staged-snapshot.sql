-- What the reset's exported snapshot held for each staged row (SYNC-CAP-006,
-- SYNC-CAP-007). Catch-up applies the candidate slot's transactions to
-- row_image, server_version and state; these columns keep the baseline as the
-- snapshot gave it, so inspection can tell the two apart after activation.
-- A row only catch-up wrote has none.
ALTER TABLE synchro.reset_staged_rows
  ADD COLUMN snapshot_image jsonb,
  ADD COLUMN snapshot_version text,
  ADD COLUMN snapshot_state text CHECK (snapshot_state IN ('live', 'deleted'));
