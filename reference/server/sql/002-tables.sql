-- Metadata of the reference server. Everything lives in schema synchro and is
-- owned by synchro_owner (this file runs under SET ROLE synchro_owner).

-- Registry: each activated change gets a new generation; only complete,
-- validated generations are ever written (registration is one transaction).
CREATE TABLE synchro.registry_generations (
  generation bigint PRIMARY KEY CHECK (generation > 0),
  state text NOT NULL CHECK (state IN ('pending', 'active')),
  validated boolean NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);

CREATE SEQUENCE synchro.logical_id_seq;

CREATE TABLE synchro.relations (
  relation_id text PRIMARY KEY,
  table_id text NOT NULL UNIQUE,
  registry_generation bigint NOT NULL REFERENCES synchro.registry_generations,
  kind text NOT NULL CHECK (kind IN ('synced', 'capture_dependency')),
  physical_schema text NOT NULL,
  physical_relation text NOT NULL,
  physical_relation_oid oid NOT NULL,
  replica_identity "char" NOT NULL CHECK (replica_identity = 'd'),
  pk_column text NOT NULL,
  pk_field_id text NOT NULL,
  pk_type text NOT NULL CHECK (pk_type IN ('string', 'int', 'int64')),
  updated_at_column text,
  deleted_at_column text,
  push_policy text NOT NULL CHECK (push_policy IN ('enabled', 'disabled')),
  composition text NOT NULL CHECK (composition IN ('single_scope', 'multi_scope')),
  membership_function text,
  max_scope_fanout integer NOT NULL CHECK (max_scope_fanout > 0),
  active boolean NOT NULL DEFAULT true
);
CREATE UNIQUE INDEX relations_active_oid ON synchro.relations (physical_relation_oid) WHERE active;

CREATE TABLE synchro.fields (
  table_id text NOT NULL REFERENCES synchro.relations (table_id),
  field_id text NOT NULL,
  column_name text NOT NULL,
  portable_type text NOT NULL,
  nullable boolean NOT NULL,
  writable boolean NOT NULL,
  generated boolean NOT NULL,
  numeric_precision integer,
  numeric_scale integer,
  PRIMARY KEY (table_id, field_id),
  UNIQUE (table_id, column_name)
);

-- Published manifests are immutable values; the current one has the highest version.
CREATE TABLE synchro.manifests (
  schema_version bigint PRIMARY KEY CHECK (schema_version > 0),
  schema_hash text NOT NULL UNIQUE CHECK (schema_hash ~ '^[0-9a-f]{64}$'),
  registry_generation bigint NOT NULL,
  parent_version bigint,
  parent_hash text,
  transition_class text NOT NULL CHECK (transition_class IN ('initial', 'class_2', 'class_3', 'class_4')),
  compatibility_floor bigint NOT NULL CHECK (compatibility_floor > 0),
  body_text text NOT NULL,
  published_at timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE synchro.manifest_affected_scopes (
  schema_version bigint NOT NULL REFERENCES synchro.manifests,
  scope_id text NOT NULL,
  PRIMARY KEY (schema_version, scope_id)
);

CREATE FUNCTION synchro.refuse_manifest_change() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, synchro AS $$
BEGIN
  RAISE EXCEPTION 'published manifests are immutable' USING ERRCODE = '55000';
END
$$;
CREATE TRIGGER manifests_immutable BEFORE UPDATE OR DELETE ON synchro.manifests
  FOR EACH ROW EXECUTE FUNCTION synchro.refuse_manifest_change();
CREATE TRIGGER manifests_immutable_truncate BEFORE TRUNCATE ON synchro.manifests
  FOR EACH STATEMENT EXECUTE FUNCTION synchro.refuse_manifest_change();

-- The registry generation the current manifest was last checked against.
CREATE TABLE synchro.manifest_state (
  singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
  checked_generation bigint NOT NULL
);
INSERT INTO synchro.manifest_state VALUES (true, 0);

-- Clients and their scope assignment.
CREATE TABLE synchro.clients (
  user_id text NOT NULL,
  client_id text NOT NULL CHECK (client_id <> ''),
  client_generation bigint NOT NULL CHECK (client_generation BETWEEN 1 AND 9007199254740991),
  scope_set_version bigint NOT NULL DEFAULT 0 CHECK (scope_set_version BETWEEN 0 AND 9007199254740991),
  accepted_write_epoch bigint NOT NULL DEFAULT 1 CHECK (accepted_write_epoch >= 1),
  installed_schema_version bigint,
  installed_schema_hash text,
  platform text,
  app_version text,
  created_at timestamptz NOT NULL DEFAULT now(),
  last_acknowledged_at timestamptz,
  expired boolean NOT NULL DEFAULT false,
  PRIMARY KEY (user_id, client_id)
);
CREATE TABLE synchro.client_scopes (
  user_id text NOT NULL,
  client_id text NOT NULL,
  scope_id text NOT NULL,
  assigned boolean NOT NULL,
  changed_at_version bigint NOT NULL,
  PRIMARY KEY (user_id, client_id, scope_id),
  FOREIGN KEY (user_id, client_id) REFERENCES synchro.clients
);
-- Permanent: a retired client identity never comes back.
CREATE TABLE synchro.client_retirements (
  user_id text NOT NULL,
  client_id text NOT NULL,
  retirement_id uuid NOT NULL DEFAULT gen_random_uuid(),
  retired_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (user_id, client_id)
);

CREATE TABLE synchro.user_scope_grants (
  user_id text NOT NULL,
  scope_id text NOT NULL CHECK (btrim(scope_id) <> ''),
  granted_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (user_id, scope_id)
);
CREATE TABLE synchro.default_scope_revocations (
  user_id text PRIMARY KEY,
  revoked_at timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE synchro.shared_scopes (
  scope_id text PRIMARY KEY CHECK (btrim(scope_id) <> '' AND scope_id NOT LIKE 'user:%'),
  portable boolean NOT NULL DEFAULT false,
  registered_at timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE synchro.assignment_function (
  singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
  fn_oid oid NOT NULL,
  fn_schema text NOT NULL,
  fn_name text NOT NULL,
  max_scopes integer CHECK (max_scopes BETWEEN 1 AND 1000),
  def_sha256 bytea NOT NULL CHECK (octet_length(def_sha256) = 32),
  registered_by text NOT NULL,
  registered_at timestamptz NOT NULL DEFAULT now()
);

-- Push ledgers. They never expire; only a retirement marker makes a client's rows deletable.
CREATE TABLE synchro.push_batches (
  user_id text NOT NULL,
  client_id text NOT NULL,
  batch_id uuid NOT NULL,
  protocol_version integer NOT NULL CHECK (protocol_version = 3),
  client_generation bigint NOT NULL,
  schema_version bigint NOT NULL,
  schema_hash text NOT NULL,
  fp_algorithm text NOT NULL CHECK (fp_algorithm = 'sha256'),
  fp_version integer NOT NULL CHECK (fp_version = 1),
  fp_domain text NOT NULL CHECK (fp_domain = 'synchro:v3:push-batch-fingerprint:v1'),
  fp bytea NOT NULL CHECK (octet_length(fp) = 32),
  state text NOT NULL CHECK (state IN ('claimed', 'complete')),
  http_status integer,
  response_body text,
  created_at timestamptz NOT NULL DEFAULT now(),
  completed_at timestamptz,
  CHECK (state <> 'complete' OR (http_status IS NOT NULL AND response_body IS NOT NULL)),
  PRIMARY KEY (user_id, client_id, batch_id)
);
CREATE TABLE synchro.push_mutations (
  user_id text NOT NULL,
  client_id text NOT NULL,
  mutation_id uuid NOT NULL,
  fp_algorithm text NOT NULL CHECK (fp_algorithm = 'sha256'),
  fp_version integer NOT NULL CHECK (fp_version = 1),
  fp_domain text NOT NULL CHECK (fp_domain = 'synchro:v3:push-mutation-fingerprint:v1'),
  fp bytea NOT NULL CHECK (octet_length(fp) = 32),
  first_batch_id uuid NOT NULL,
  request_ordinal integer NOT NULL,
  authored_schema_version bigint NOT NULL,
  authored_schema_hash text NOT NULL,
  submitted_schema_version bigint NOT NULL,
  submitted_schema_hash text NOT NULL,
  table_id text NOT NULL,
  pk_text text NOT NULL,
  op text NOT NULL CHECK (op IN ('insert', 'update', 'delete')),
  status text NOT NULL CHECK (status IN ('applied', 'conflict', 'rejected_terminal')),
  code text,
  outcome text NOT NULL,
  outcome_schema_version bigint NOT NULL,
  outcome_schema_hash text NOT NULL,
  completed_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (user_id, client_id, mutation_id)
);

-- Write fences: one row per identity ever written; 'reserved' exists only inside an inserting transaction.
CREATE TABLE synchro.row_versions (
  table_id text NOT NULL,
  pk_text text NOT NULL,
  state text NOT NULL CHECK (state IN ('reserved', 'live', 'deleted')),
  server_version text NOT NULL CHECK (server_version ~ '^[ !#-\[\]-~]{1,64}$'),
  mutation_id uuid,
  changed_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (table_id, pk_text)
);
