@SYNC-CAP-009 @server @internal
Feature: Qualified Registered Relation Identity
  A registered relation is known by an immutable logical identity plus its
  exact schema, relation name and OID. Every lookup (registry, catalog,
  publication, decoder, hydration, scope function) uses that qualified identity.
  A bare name or search_path lookup can silently bind to a different table with
  the same name, and rebinding after a rename or re-create would mix two
  tables' rows under one identity. Drift must stop capture until an operator
  reconfigures and clients rebuild. The harness creates same-named tables in
  other schemas, plays with search_path, renames, moves and re-creates tables,
  and checks registration errors, readiness, the pull wire and the slot
  position.

  Background:
    Given the source database has schemas "a" and "b" each with a table "items":
      """
      CREATE TABLE a.items (id text PRIMARY KEY, owner_id text NOT NULL, label text);
      CREATE TABLE b.items (id text PRIMARY KEY, owner_id text NOT NULL, label text);
      """

  Rule: registration and every lookup use the exact schema-qualified physical identity and the immutable logical identity

    @cap:provision @cap:sourceSql
    Scenario: registering the bare name of an ambiguous relation is refused
      When the operator registers table "items" with primary key "id"
      Then the registration fails with error code "invalid_registration" and reason "ambiguous_physical_relation"
      And no new active registry generation exists

    @cap:provision @cap:sourceSql @cap:capture
    Scenario: writes to the same-named table in another schema never reach clients, whatever the search_path
      Given the operator has registered table "a.items" with primary key "id" and membership scope "user:{owner_id}"
      And user "alice" is assigned scope "user:alice"
      And client "A" of user "alice" has connected and rebuilt every assigned scope
      When the harness commits on the source database:
        """
        SET search_path = b, a, public;
        INSERT INTO items (id, owner_id, label) VALUES ('b-1', 'alice', 'wrong schema');
        INSERT INTO a.items (id, owner_id, label) VALUES ('a-1', 'alice', 'registered');
        """
      And capture has materialized every committed source transaction
      And client "A" pulls
      Then the pull response lists exactly these changes:
        | scope      | table | op     | pk  |
        | user:alice | items | upsert | a-1 |

    @cap:provision @cap:sourceSql @cap:capture
    Scenario: a same-named scope function earlier on the search_path is not used
      Given the source database has functions:
        """
        CREATE FUNCTION a.scope_of(p_row_key text) RETURNS SETOF text LANGUAGE sql STABLE
          BEGIN ATOMIC SELECT 'user:' || owner_id FROM synchro_projection.items WHERE id = p_row_key; END;
        CREATE FUNCTION b.scope_of(p_row_key text) RETURNS SETOF text LANGUAGE sql STABLE
          BEGIN ATOMIC SELECT 'user:mallory'; END;
        """
      And the operator has registered table "a.items" with primary key "id" and membership function "a.scope_of"
      And user "alice" is assigned scope "user:alice"
      And client "A" of user "alice" has connected and rebuilt every assigned scope
      When the harness commits on the source database:
        """
        DO $$ BEGIN EXECUTE format('ALTER DATABASE %I SET search_path = b, a, public', current_database()); END $$;
        """
      And the capture worker is killed
      # The worker restarts before the write, so the session that decodes it already has the new search_path.
      And the capture worker is restarted
      And the harness commits on the source database:
        """
        INSERT INTO a.items (id, owner_id, label) VALUES ('a-2', 'alice', 'qualified');
        """
      And capture has materialized every committed source transaction
      And client "A" pulls
      Then the pull response lists exactly these changes:
        | scope      | table | op     | pk  |
        | user:alice | items | upsert | a-2 |

    @cap:provision @cap:sourceSql @cap:inspect
    Scenario: adding the same-named relation to the publication fails readiness
      Given the operator has registered table "a.items" with primary key "id" and membership scope "user:{owner_id}"
      When the harness adds relation "b.items" to the publication that captures "a.items"
      Then server inspection reports the capture check "publication" as "failed"
      And the readiness response is 503 with body exactly:
        """
        {"ready":false}
        """

    @cap:provision @cap:schema
    Scenario: the manifest carries logical identities and no physical names
      Given the operator has registered table "a.items" with primary key "id" and membership scope "user:{owner_id}"
      When client "A" of user "alice" connects
      Then the manifest in the connect response has a table with a "table_id" and fields with "field_id" values
      And no string in the connect response equals "a", "a.items" or the OID of "a.items"

  Rule: relation drift is detected through the OID and other physical identity, and blocks capture

    @cap:provision @cap:sourceSql @cap:capture @cap:inspect
    Scenario Outline: <drift> blocks capture, readiness and the public endpoints without naming the relation
      Given the operator has registered table "a.items" with primary key "id" and membership scope "user:{owner_id}"
      And user "alice" is assigned scope "user:alice"
      And client "A" of user "alice" has connected and rebuilt every assigned scope
      When the harness commits on the source database:
        """
        <sql>
        """
      And the harness commits on the source database and records the commit position as "W":
        """
        <write>
        """
      And the capture worker completes 3 polls
      Then server inspection reports the capture check "relation_identity" as "failed"
      And the readiness response is 503 with body exactly:
        """
        {"ready":false}
        """
      When client "A" pulls
      Then the response status is 503 with error code "temporary_unavailable"
      And the error body has "retryable" true and "reason" "capture_blocked"
      And the response body contains none of "items", "a.items", "renamed_items"
      And server inspection shows the slot's confirmed position at or before position "W"

      Examples:
        | drift                  | sql                                                                                                                   | write                                                                         |
        | a rename               | ALTER TABLE a.items RENAME TO renamed_items;                                                                         | INSERT INTO a.renamed_items (id, owner_id, label) VALUES ('x-1', 'alice', 'after rename'); |
        | a schema move          | ALTER TABLE a.items SET SCHEMA public;                                                                               | INSERT INTO public.items (id, owner_id, label) VALUES ('x-1', 'alice', 'after move');      |
        | a drop and re-create   | DROP TABLE a.items; CREATE TABLE a.items (id text PRIMARY KEY, owner_id text NOT NULL, label text);                   | INSERT INTO a.items (id, owner_id, label) VALUES ('x-1', 'alice', 'recreated');            |

  Rule: bare-name resolution and automatic rebinding after drift are violations

    @negative @cap:provision @cap:sourceSql @cap:capture
    Scenario: rows of a re-created same-named table never appear, even after a worker restart
      Given the operator has registered table "a.items" with primary key "id" and membership scope "user:{owner_id}"
      And user "alice" is assigned scope "user:alice"
      And client "A" of user "alice" has connected and rebuilt every assigned scope
      When the harness commits on the source database:
        """
        DROP TABLE a.items;
        CREATE TABLE a.items (id text PRIMARY KEY, owner_id text NOT NULL, label text);
        INSERT INTO a.items (id, owner_id, label) VALUES ('x-2', 'alice', 'impostor');
        """
      And the capture worker is restarted
      And the capture worker completes 3 polls
      And client "A" pulls
      Then the response status is 503 with error code "temporary_unavailable"
      And no response to client "A" ever lists row "x-2"

    @negative @cap:provision @cap:sourceSql @cap:capture @cap:inspect
    Scenario: a renamed relation is not re-bound by a reload and is only resumed by a controlled reconfiguration
      Given the operator has registered table "a.items" with primary key "id" and membership scope "user:{owner_id}"
      And user "alice" is assigned scope "user:alice"
      And client "A" of user "alice" has connected and rebuilt every assigned scope
      And the harness records the "table_id" and every "field_id" of table "items" in the manifest as "before"
      When the harness commits on the source database:
        """
        ALTER TABLE a.items RENAME TO things;
        INSERT INTO a.things (id, owner_id, label) VALUES ('x-3', 'alice', 'after rename');
        """
      And the capture worker is restarted
      And the capture worker completes 3 polls
      Then server inspection reports the capture check "relation_identity" as "failed"
      When the operator performs a controlled reconfiguration that binds table "items" to relation "a.things"
      And capture has materialized every committed source transaction
      And client "A" connects
      Then the manifest in the connect response keeps the "table_id" and field IDs recorded as "before"
      When client "A" pulls
      Then the pull response lists scope "user:alice" in "rebuild"
      When client "A" rebuilds scope "user:alice" to its final page
      # Same table_id and field IDs (checked above); the manifest name is the relation's new one (ADR 004).
      Then the rebuild pages hold exactly these records:
        | table  | pk  |
        | things | x-3 |
