@SYNC-SCHEMA-001 @server
Feature: Immutable Schema Manifest
  A schema manifest is the contract from which clients build their synced
  tables. Client and server agree on it by version and hash only. For that to
  work, a published manifest must be one stored value: body, hash, positive
  version, transition class, compatibility floor, composition, table IDs and
  field IDs are written together and never edited afterwards. If a server
  rebuilt the body from its live catalog, two clients holding the same hash
  could end up with different tables and nothing on the wire would show it.
  The harness keeps every manifest it receives, keyed by version and by hash. It
  recomputes each hash from the body and fails the run as soon as one version
  or one hash maps to two different bodies.

  Background:
    Given a registered table "tasks" with columns:
      | column   | type    | nullable | key |
      | id       | string  | false    | yes |
      | owner_id | string  | false    | no  |
      | title    | string  | false    | no  |
      | done     | boolean | false    | no  |
    And table "tasks" places each row in scope "user:{owner_id}"

  Rule: A published manifest is one complete stored value whose hash is computed over its own body

    Scenario: The initial manifest carries every identity member and hashes to its own body
      When client "A" of user "alice" connects with schema {"version":0,"hash":""}
      Then the response status is 200
      And the connect response has schema action "replace"
      And member "schema_definition" matches schema "schema-manifest"
      And "schema_definition.schema_version" equals "schema.version" and is at least 1
      And "schema_definition.schema_hash" equals "schema.hash" and is 64 lowercase hex characters
      And "schema_definition.transition_class" is "initial" and "schema_definition.parent_schema" is null
      And "schema_definition.compatibility_floor" equals "schema_definition.schema_version"
      And every table in "schema_definition.tables" has a nonempty "table_id", a "composition" of "single_scope" or "multi_scope" and a nonempty "field_id" on every field
      And SHA-256 over "synchro:v3:schema-manifest:v1", one 0x00 octet and the RFC 8785 form of "schema_definition" without "schema_hash" equals "schema.hash"

    @cap:schema
    Scenario: Connects racing a publication see one whole manifest, never a mix
      Given client "A" of user "alice" has connected and rebuilt every assigned scope
      When the operator publishes a "class_2" manifest that adds nullable column "note" of type "string" to table "tasks" while 20 fresh clients of user "alice" connect concurrently
      Then every one of the 20 connect responses has a "schema_definition" whose recomputed hash equals its "schema.hash"
      And every one of the 20 connect responses carries either the version 1 body recorded before the publication or one version 2 body, the same for all responses naming version 2

  Rule: Nothing of a published manifest changes in place

    @negative @cap:sourceSql
    Scenario: Unmanaged source DDL never changes the body served under the current version and hash
      Given client "A" of user "alice" has connected and rebuilt every assigned scope
      And the harness has recorded the manifest served by "GET /sync/schema"
      When the harness commits on the source database:
        """
        ALTER TABLE public.tasks ADD COLUMN color text;
        """
      And client "A" connects
      Then the connect response has schema action "none" with the same "schema.version" and "schema.hash" as before
      And "GET /sync/schema" serves a "manifest" byte-identical to the recorded one

    @negative @cap:schema
    Scenario: A new publication gets a new version and hash and leaves its parent untouched
      Given the harness client "A" of user "alice" has completed its first sync under manifest version 1
      And the harness has recorded the version 1 manifest as "m1"
      When the operator publishes a "class_2" manifest that adds nullable column "note" of type "string" to table "tasks"
      And client "A" connects
      Then the connect response has schema action "replace"
      And "schema.version" is 2 and "schema.hash" differs from the hash of "m1"
      And "schema_definition.parent_schema" equals the version and hash of "m1"
      And "schema_definition.transition_class" is "class_2"
      And the "table_id" of "tasks" and the "field_id" of each of "id", "owner_id", "title" and "done" are the same as in "m1"
      And the harness manifest ledger maps no version and no hash to two different bodies

    @cap:inspect
    Scenario Outline: The server refuses to <operation> a stored manifest
      Given the harness client "A" of user "alice" has completed its first sync under manifest version 1
      When the operator tries to <operation> the stored manifest of version 1
      Then the attempt fails
      And "GET /sync/schema" serves a "manifest" byte-identical to the version 1 body recorded at the first connect

      Examples:
        | operation                 |
        | update the body of        |
        | change the hash of        |
        | change the class of       |
        | lower the floor of        |
        | delete                    |
