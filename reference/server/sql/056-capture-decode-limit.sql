-- The capture worker's decode row limit: how many decoded rows one peek of the
-- slot may return. PostgreSQL stops decoding at the end of the transaction in
-- which the limit is reached, so a small limit only makes batches smaller; it
-- never splits a transaction. An operator setting, read by the worker at every
-- poll, so a test or a tuning change takes effect without a restart.
ALTER TABLE synchro.capture_limits ADD COLUMN decode_row_limit integer NOT NULL DEFAULT 5000 CHECK (decode_row_limit > 0);
