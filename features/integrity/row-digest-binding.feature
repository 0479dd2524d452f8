@SYNC-INTEG-002 @server @client
Feature: Row Digest Binding
  Every message that hands a client a row also hands it the proof that the row
  is the one the server meant: an opaque server_version and a row_checksum
  object {"algorithm":"sha256","version":1,"encoding":"hex","digest":...}.
  The digest is SHA-256 over the row-digest domain, the 32 raw octets of the
  schema hash the row was encoded under, the length-prefixed row identity
  (row-identity domain, logical table ID, key field ID, typed key value), the
  length-prefixed canonical row body and the server_version text. Change any
  one of them and the digest changes. This holds for push outcomes that carry
  server_row, pull upserts and tombstone deletes, rebuild records and portable
  seed records. A rowless delete carries its fence server_version and no
  checksum. A receiver checks each digest before it applies a row, reconciles
  an outcome or moves a cursor, and on a failure it does none of these.

  The harness recomputes every digest with its codec and compares; it makes
  the proxy change one bound input while keeping the old digest, drop or
  stale the version, or attach a checksum to a rowless delete, and checks that
  the client refuses the whole response and that its queue, rows and cursors
  stay as they were.

  Background:
    Given a registered table "tasks" with columns:
      | column     | type     | key | nullable |
      | id         | string   | yes | no       |
      | owner_id   | string   | no  | no       |
      | title      | string   | no  | no       |
      | deleted_at | datetime | no  | yes      |
    And table "tasks" marks deletion with column "deleted_at"
    And a registered table "notes" with columns:
      | column   | type   | key |
      | id       | string | yes |
      | owner_id | string | no  |
      | title    | string | no  |
    And table "tasks" places each row in scope "user:{owner_id}"
    And table "notes" places each row in scope "user:{owner_id}"
    And table "notes" also places rows whose owner_id is "p1" in scope "project:p1"
    And client "A" of user "alice" has connected and rebuilt every assigned scope

  @cap:provision
  Rule: every row-bearing message carries a server version and a SHA-256 row digest over the bound inputs

    Scenario: push outcomes carry a version and a verifying digest with every row
      When client "A" pushes a batch with:
        | mutation_id                          | operation | table | pk  | owner_id | title |
        | 0a1b2c3d-4e5f-4a61-8b72-c3d4e5f6a701 | insert    | tasks | t-1 | alice    | one   |
      Then the push outcome of mutation "0a1b2c3d-4e5f-4a61-8b72-c3d4e5f6a701" is "applied"
      When client "A" pushes a batch with:
        | mutation_id                          | operation | table | pk  | owner_id | title |
        | 0a1b2c3d-4e5f-4a61-8b72-c3d4e5f6a702 | insert    | tasks | t-1 | alice    | again |
      Then the push outcome of mutation "0a1b2c3d-4e5f-4a61-8b72-c3d4e5f6a702" is "conflict" with code "row_already_exists"
      And each of the two outcomes has a "server_version", a "server_row" and a "row_checksum" that is exactly {"algorithm":"sha256","version":1,"encoding":"hex","digest":<64 lowercase hex>}
      And each outcome's digest equals the harness codec digest over its outcome_schema hash, table, pk, server_row and server_version

    @cap:sourceSql
    Scenario: pull upserts, tombstone deletes and rebuild records carry verifying digests
      When the harness commits on the source database:
        """
        INSERT INTO public.tasks (id, owner_id, title) VALUES ('t-2', 'alice', 'kept'), ('t-3', 'alice', 'soft');
        INSERT INTO public.notes (id, owner_id, title) VALUES ('n-1', 'alice', 'note');
        UPDATE public.tasks SET deleted_at = '2026-09-01T08:00:00Z' WHERE id = 't-3';
        """
      And capture has materialized every committed source transaction
      And client "A" pulls
      And client "A" requests a rebuild of scope "user:alice" and fetches every page
      Then every pull change with a "row" and every rebuild record has a "server_version" and a "row_checksum" whose digest equals the harness codec digest under the current manifest
      And the pull change for row "t-3" has op "delete" and carries its tombstone row with a verifying digest

    @cap:sourceSql
    Scenario: a rowless delete keeps its fence version and carries no checksum
      Given the harness has committed and capture has materialized:
        """
        INSERT INTO public.notes (id, owner_id, title) VALUES ('n-2', 'alice', 'to remove');
        """
      And client "A" has pulled
      When the harness commits on the source database:
        """
        DELETE FROM public.notes WHERE id = 'n-2';
        """
      And capture has materialized every committed source transaction
      And client "A" pulls
      Then the pull change for row "n-2" of table "notes" has op "delete", a "server_version" and neither "row" nor "row_checksum"

    @cap:sourceSql @cap:seed
    Scenario: portable seed records carry a version and a verifying digest
      Given a registered shared scope "catalog_public" declared portable
      And table "notes" now also places rows whose owner_id is "catalog" in scope "catalog_public"
      And the harness has committed and capture has materialized:
        """
        INSERT INTO public.notes (id, owner_id, title) VALUES ('n-10', 'catalog', 'seeded one'), ('n-11', 'catalog', 'seeded two');
        """
      When the harness exports the portable seed pages of scope "catalog_public" in one seed export transaction
      Then every seed record has a "server_version" and a "row_checksum" whose digest equals the harness codec digest under the export's schema hash

    Scenario: the digest follows every bound input
      When client "A" pushes a batch with:
        | mutation_id                          | operation | table | pk  | owner_id | title |
        | 1b2c3d4e-5f6a-4b72-9c83-d4e5f6a7b801 | insert    | tasks | t-4 | alice    | same  |
        | 1b2c3d4e-5f6a-4b72-9c83-d4e5f6a7b802 | insert    | notes | t-4 | alice    | same  |
        | 1b2c3d4e-5f6a-4b72-9c83-d4e5f6a7b803 | insert    | tasks | t-5 | alice    | same  |
      And client "A" pushes a batch with:
        | mutation_id                          | operation | table | pk  | base_version | title |
        | 1b2c3d4e-5f6a-4b72-9c83-d4e5f6a7b804 | update    | tasks | t-4 | current      | same  |
      Then the four row checksums reported for these outcomes are pairwise different
      And for each of them, changing any one of the schema hash, table ID, key field ID, key type, key value, a field value, a null state or the server_version in the codec input gives a digest different from the reported one

    @cap:schema
    Scenario: the same row under a new manifest has a new digest
      Given client "A" has pushed an insert of row "t-6" and holds its row checksum C1
      And the server publishes a class 2 manifest that adds a nullable column "note" of type "string" to table "tasks"
      When client "A" connects
      And client "A" requests a rebuild of scope "user:alice" and fetches every page
      Then the rebuild record for row "t-6" has a row checksum different from C1 that verifies under the new manifest

  @cap:provision
  Rule: the server never sends a missing or stale version

    Scenario: a pull change carries the version of the latest accepted write, not an older one
      Given client "A" has pushed an insert of row "t-7" and holds its server version
      And client "A" has pushed an update of row "t-7" to title "newer" and holds its server version V2
      When capture has materialized every committed source transaction
      And client "A" pulls
      Then the pull change for row "t-7" of table "tasks" has "server_version" equal to V2
      And its row has "title" equal to "newer"

  @cap:provision
  Rule: a receiver refuses a changed bound value under an unchanged digest

    @negative @cap:sourceSql
    Scenario Outline: a pull page whose bound value changed under the old digest is refused whole
      Given the harness has committed and capture has materialized:
        """
        INSERT INTO public.tasks (id, owner_id, title) VALUES ('t-8', 'alice', 'honest'), ('t-9', 'alice', 'also honest');
        """
      And the proxy will apply <tamper> to the change for row "t-9" in the next pull response to client "A", keeping its row checksum
      When client "A" syncs
      Then the sync of client "A" ends with completion "error"
      And client "A" has neither row "t-8" nor row "t-9" in table "tasks"
      And the cursor client "A" stores for scope "user:alice" is unchanged

      Examples:
        | tamper                                                          |
        | setting "title" to "dishonest"                                   |
        | setting "server_version" to "sv-other"                           |
        | setting the pk and the row's "id" to "t-99"                      |
        | setting "table" to "notes"                                      |
        | exchanging its "row_checksum" with the one of row "t-8"          |
        | flipping one hex digit of its "row_checksum" digest              |
        | setting the "row_checksum" member "algorithm" to "sha-256"       |
        | setting the "row_checksum" digest to upper case                  |

    @negative @cap:sourceSql
    Scenario: a rebuild page whose row changed under the old digest is refused
      Given the harness has committed and capture has materialized:
        """
        INSERT INTO public.tasks (id, owner_id, title) VALUES ('t-10', 'alice', 'original');
        """
      And client "A" has rebuild required for scope "user:alice"
      And the proxy will apply setting "title" to "changed" to the record for row "t-10" in the next rebuild response to client "A", keeping its row checksum
      When client "A" syncs
      Then the sync of client "A" ends with completion "error"
      And client "A" has no row "t-10" in table "tasks"
      And client "A" reports no final rebuild cursor installed for scope "user:alice"

  @cap:provision
  Rule: a receiver refuses a row-bearing message with a missing or stale version

    @negative @cap:sourceSql
    Scenario Outline: a pull change without its version, or with another version of the row, is refused
      Given the harness has committed and capture has materialized:
        """
        INSERT INTO public.tasks (id, owner_id, title) VALUES ('t-11', 'alice', 'first');
        """
      And client "A" has synced
      And the harness has committed and capture has materialized:
        """
        UPDATE public.tasks SET title = 'second' WHERE id = 't-11';
        """
      And the proxy will apply <tamper> to the change for row "t-11" in the next pull response to client "A", keeping its row checksum
      When client "A" syncs
      Then the sync of client "A" ends with completion "error"
      And querying "SELECT title FROM tasks WHERE id = 't-11'" on client "A" returns:
        | title |
        | first |

      Examples:
        | tamper                                                          |
        | removing the member "server_version"                            |
        | setting "server_version" to the version client "A" holds for it |

  @cap:provision
  Rule: no outcome is reconciled and no cursor advances after a digest failure

    @negative
    Scenario: a push outcome with a bad digest is not reconciled
      Given client "A" executes SQL:
        """
        INSERT INTO tasks (id, owner_id, title) VALUES ('t-12', 'alice', 'queued');
        """
      And the proxy will flip one hex digit of the "row_checksum" digest of the first accepted outcome in the next push response to client "A"
      When client "A" syncs
      Then the sync of client "A" ends with completion "error"
      And client "A" still reports the mutation for row "t-12" as not accepted

    @negative @cap:sourceSql
    Scenario: one bad digest on a terminal page leaves every scope cursor where it was
      Given user "alice" is assigned scope "project:p1"
      And client "A" has synced
      And the harness has committed and capture has materialized:
        """
        INSERT INTO public.tasks (id, owner_id, title) VALUES ('t-13', 'alice', 'mine');
        INSERT INTO public.notes (id, owner_id, title) VALUES ('n-3', 'p1', 'project');
        """
      And the proxy will flip one hex digit of the "row_checksum" digest of the change for row "n-3" in the next pull response to client "A"
      When client "A" syncs
      Then the sync of client "A" ends with completion "error"
      And the cursors client "A" stores for scopes "user:alice" and "project:p1" are unchanged
      And client "A" has neither row "t-13" nor row "n-3"

  @cap:provision
  Rule: a checksum never comes without a row

    @negative @cap:sourceSql
    Scenario Outline: a checksum on a rowless delete, or a row without its checksum, is refused
      Given the harness has committed and capture has materialized:
        """
        INSERT INTO public.notes (id, owner_id, title) VALUES ('n-4', 'alice', 'will go');
        """
      And client "A" has synced
      And the harness has committed and capture has materialized:
        """
        <change>
        """
      And the proxy will apply <tamper> to the change for row "n-4" in the next pull response to client "A"
      When client "A" syncs
      Then the sync of client "A" ends with completion "error"
      And querying "SELECT title FROM notes WHERE id = 'n-4'" on client "A" returns:
        | title   |
        | will go |

      Examples:
        | change                                                      | tamper                                                                          |
        | DELETE FROM public.notes WHERE id = 'n-4';                  | adding a "row_checksum" copied from the last verified digest of row "n-4"      |
        | UPDATE public.notes SET title = 'changed' WHERE id = 'n-4'; | removing the member "row_checksum"                                              |
        | UPDATE public.notes SET title = 'changed' WHERE id = 'n-4'; | removing the members "row" and "row_checksum" while keeping "op" as "upsert"     |

    @cap:sourceSql
    Scenario: no server message in the run pairs a checksum with a missing row
      Given the harness has committed and capture has materialized:
        """
        INSERT INTO public.notes (id, owner_id, title) VALUES ('n-20', 'alice', 'stays'), ('n-21', 'alice', 'goes');
        """
      And client "A" has pulled
      When client "A" pushes a batch with:
        | mutation_id                          | operation | table | pk   | owner_id | title   |
        | 2c3d4e5f-6a7b-4c83-9d94-e5f6a7b8c901 | insert    | tasks | t-20 | alice    | new     |
        | 2c3d4e5f-6a7b-4c83-9d94-e5f6a7b8c902 | insert    | notes | n-20 | alice    | clashes |
      And the harness commits on the source database:
        """
        DELETE FROM public.notes WHERE id = 'n-21';
        """
      And capture has materialized every committed source transaction
      And client "A" pulls
      And client "A" requests a rebuild of scope "user:alice" and fetches every page
      Then across every push outcome, pull change and rebuild record recorded in this run, "row_checksum" is present exactly when "server_row" or "row" is present
