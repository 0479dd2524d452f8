-- Scope-set history: the assigned set of a client at each scope_set_version
-- the server handed out. A pull whose response is lost leaves the client at
-- its older version; the next pull answers the delta from the set at that
-- version to the current one, so the lost add or remove is sent again.
--
-- One row per version, written by the reconciliation (connect or pull) that
-- advances the version, in the same transaction. client_generation records
-- which generation the set was handed to; the version alone identifies the
-- set because it keeps counting across generations. Rows below the version a
-- client presents on a successful pull are deleted by that pull: the client
-- holds that version and never goes back to an older one.
CREATE TABLE synchro.client_scope_sets (
  user_id text NOT NULL,
  client_id text NOT NULL,
  scope_set_version bigint NOT NULL CHECK (scope_set_version BETWEEN 0 AND 9007199254740991),
  client_generation bigint NOT NULL,
  scope_ids text[] NOT NULL,
  recorded_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (user_id, client_id, scope_set_version),
  FOREIGN KEY (user_id, client_id) REFERENCES synchro.clients
);
