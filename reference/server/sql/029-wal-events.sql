-- One durable record per source row event the worker materialized: the event
-- replay identity (stream_generation, commit_lsn, event_ordinal) that every
-- pull effect of the event carries, written in the materialization
-- transaction of its source transaction. A replay finds it and writes nothing.
CREATE TABLE synchro.wal_events (
  stream_generation text NOT NULL,
  commit_lsn pg_lsn NOT NULL,
  event_ordinal bigint NOT NULL CHECK (event_ordinal >= 0),
  table_id text NOT NULL,
  pk_text text NOT NULL,
  operation text NOT NULL CHECK (operation IN ('insert', 'update', 'delete', 'baseline')),
  server_version text NOT NULL,
  PRIMARY KEY (stream_generation, commit_lsn, event_ordinal)
);
