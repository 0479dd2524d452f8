-- Readiness reads time from the server's clock, not from the database's alone.
-- The reference's clock is the system clock plus an offset that only the test
-- controls move (core/clock.ts); they write the offset here too, so the
-- heartbeat and lag ages readiness reports follow a moved clock exactly as the
-- protocol's lifetimes do. Instants the database stamped stay on its own clock,
-- so moving the clock forward ages them. Without test controls the offset is 0.
CREATE TABLE synchro.server_clock (
  singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
  offset_ms bigint NOT NULL DEFAULT 0
);
INSERT INTO synchro.server_clock DEFAULT VALUES;

CREATE FUNCTION synchro.server_now() RETURNS timestamptz
LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, synchro AS $$
  SELECT clock_timestamp() + make_interval(secs => coalesce((SELECT offset_ms FROM synchro.server_clock), 0) / 1000.0);
$$;
REVOKE EXECUTE ON FUNCTION synchro.server_now() FROM PUBLIC;

-- A progress record whose acknowledgement boundary was cleared proves nothing
-- about the slot's position: readiness reports materialization_progress failed
-- and the worker stops advancing (state "blocked") until an operator restores
-- the boundary, rather than writing a fresh one over the damage.
ALTER TABLE synchro.wal_progress ALTER COLUMN acknowledged_end_lsn DROP NOT NULL;
