-- What the capture worker may touch when it runs as its own login (SYNC-OPS-002,
-- decision 350). The login belongs to synchro_worker only, with NOINHERIT, and
-- its SQL sessions run `SET ROLE synchro_worker` first; until now that group
-- held no privilege at all, since the worker ran on the server's own session.
--
-- The 005 sheet gives the worker table and sequence privileges for WAL
-- consumption and materialization, and no function: every grant here is one
-- of those. Triggers the worker's writes fire are SECURITY DEFINER already
-- (027, 048), and firing needs no EXECUTE. Slot functions are authorized by
-- the login's own REPLICATION attribute on a session that does not SET ROLE
-- (PostgreSQL checks the current role's attribute, which no group passes on).

-- The capture stream: progress, state, quarantine, the durable transaction
-- and event records, and the registry generation the stream reads under.
GRANT SELECT, INSERT, UPDATE ON synchro.wal_progress, synchro.wal_worker_state, synchro.wal_poison,
  synchro.capture_registry_state TO synchro_worker;
GRANT SELECT, INSERT ON synchro.wal_transactions, synchro.wal_events TO synchro_worker;

-- Materialized state: projections, membership, scope contents and effects,
-- and the row versions the fences wrote (read to pair events with fences).
-- An effect superseded by a later one of the same row is marked, never deleted.
GRANT SELECT, INSERT, UPDATE, DELETE ON synchro.projections, synchro.membership_edges, synchro.scope_rows,
  synchro.scope_state TO synchro_worker;
GRANT SELECT, INSERT, UPDATE ON synchro.scope_effects TO synchro_worker;
GRANT SELECT ON synchro.row_versions TO synchro_worker;

-- The registry as capture reads it (live, or a generation's stored snapshot);
-- a generation becomes active once capture has read past its activation.
GRANT SELECT ON synchro.relations, synchro.fields, synchro.membership_dependencies, synchro.manifests,
  synchro.capture_limits, synchro.stream_resets TO synchro_worker;
GRANT SELECT, UPDATE ON synchro.registry_generations TO synchro_worker;

-- The worker analyzes the tables it fills faster than autovacuum looks at
-- them (worker.ts, refreshStatistics); MAINTAIN is that right and no other.
GRANT MAINTAIN ON synchro.scope_rows, synchro.scope_effects, synchro.membership_edges, synchro.projections TO synchro_worker;

-- Each registered relation's projection (synchro_projection.<name>) is
-- replaced row by row as capture materializes it. Registration creates it as
-- synchro_owner and grants SELECT; writing it is the worker's alone.
GRANT INSERT, DELETE ON ALL TABLES IN SCHEMA synchro_projection TO synchro_worker;
ALTER DEFAULT PRIVILEGES FOR ROLE synchro_owner IN SCHEMA synchro_projection GRANT INSERT, DELETE ON TABLES TO synchro_worker;
