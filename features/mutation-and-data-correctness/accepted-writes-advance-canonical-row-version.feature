@SYNC-MUT-007 @server
Feature: Accepted Writes Advance Canonical Row Version
  Each accepted change to an authoritative row (insert, update, soft delete,
  hard delete, through push or through direct SQL) must get a fresh opaque
  server_version allocated by the server's version fence. Clients use that
  token as the base of their next write, so it must never be taken from data a
  client controls (client_version, a writable updated_at) and never repeat a
  value the row already had: otherwise an old base could match again and a
  stale write could win. The harness walks rows through every kind of
  transition and compares each returned version with the grammar, with every
  earlier version of the row and with the client-supplied values.

  Background:
    Given a registered table "notes" with columns:
      | column     | type          | key | writable | lifecycle  |
      | id         | string        | yes | no       |            |
      | owner_id   | string        | no  | yes      |            |
      | body       | string        | no  | yes      |            |
      | price      | decimal(10,2) | no  | yes      |            |
      | updated_at | datetime      | no  | no       | updated_at |
      | deleted_at | datetime      | no  | no       | deleted_at |
    And table "notes" places each row in scope "user:{owner_id}"
    And a registered table "tasks" with columns:
      | column   | type    | key | writable | lifecycle |
      | id       | string  | yes | no       |           |
      | owner_id | string  | no  | yes      |           |
      | title    | string  | no  | yes      |           |
      | done     | boolean | no  | yes      |           |
    And table "tasks" places each row in scope "user:{owner_id}"
    And client "W" of user "alice" has connected

  Rule: every accepted authoritative row transition allocates a new opaque server-generated version

    @cap:provision
    Scenario Outline: a row of table "<table>" walked through insert, two updates and a delete gets a new version each time
      When client "W" pushes, one batch after another and each from the version returned before, an insert, an update setting <field> "a", an update setting <field> "b" and a delete of row "<pk>" of table "<table>"
      Then every outcome is "applied"
      And every server_version matches ^[\x20\x21\x23-\x5B\x5D-\x7E]{1,64}$
      And the four server_versions are pairwise different
      And each update's and the delete's server_version differs from its base_version

      Examples:
        | table | pk  | field |
        | notes | n-1 | body  |
        | tasks | t-1 | title |

    @cap:provision @cap:sourceSql
    Scenario Outline: a direct SQL <operation> moves the version through the same fence
      Given the server holds these "notes" rows, created by client "W":
        | id  | owner_id | body | version |
        | n-2 | alice    | milk | V1      |
      When the harness commits on the source database:
        """
        <statement>
        """
      And client "W" pushes a batch with one update of row "n-2" of table "notes" with base_version "V1" and columns {"body":"oat"}
      Then the outcome of that mutation is in list "rejected" with status "conflict" and code "<code>"
      And that outcome has a server_version different from "V1"

      Examples:
        | operation   | statement                                                      | code             |
        | update      | UPDATE public.notes SET body = 'direct' WHERE id = 'n-2';      | version_conflict |
        | soft delete | UPDATE public.notes SET deleted_at = now() WHERE id = 'n-2';   | row_deleted      |

    @property @cap:provision
    Scenario: for many generated histories no row ever sees the same version twice
      When client "W" pushes 200 generated batches of inserts, updates and deletes over the keys n-1 to n-10 of table "notes" and t-1 to t-10 of table "tasks", each update or delete based on the latest version the harness saw for its row
      Then for every row, the server_versions of its applied outcomes are pairwise different
      And every server_version matches ^[\x20\x21\x23-\x5B\x5D-\x7E]{1,64}$

  Rule: the version never comes from client_version, a writable updated_at value or an unchanged prior version

    @negative @cap:provision
    Scenario Outline: a client_version of <when> leaks into neither the version nor updated_at
      When client "W" pushes a batch with one insert of row "n-3" of table "notes" with columns {"owner_id":"alice","body":"salt"} and client_version "<client_version>"
      Then the outcome of that mutation is in list "accepted" with status "applied" and code ""
      And that outcome's server_version neither equals nor contains "<client_version>"
      And that outcome's server_row updated_at is not "<client_version>" and lies between the moments the harness sent the request and received the response, with a tolerance of 5 seconds for clock skew

      Examples:
        | when           | client_version              |
        | the far past   | 1970-01-01T00:00:00.000000Z |
        | one day ahead  | 2026-09-02T08:00:00.000000Z |
        | the far future | 9999-12-31T23:59:59.999999Z |

    @negative @cap:provision
    Scenario: a client cannot author the update-time field
      Given the server holds these "notes" rows, created by client "W":
        | id  | owner_id | body | version |
        | n-4 | alice    | milk | V1      |
      When client "W" pushes a batch with one update of row "n-4" of table "notes" with base_version "V1" and columns {"body":"oat","updated_at":"2030-01-01T00:00:00.000000Z"}
      Then the outcome of that mutation is in list "rejected" with status "rejected_terminal" and code "validation_failed"
      And the server holds row "n-4" of table "notes" with body "milk" at version "V1"

    @negative @cap:provision
    Scenario: an update that leaves every value as it was still gets a new version
      Given the server holds these "notes" rows, created by client "W":
        | id  | owner_id | body | version |
        | n-5 | alice    | milk | V1      |
      When client "W" pushes a batch with one update of row "n-5" of table "notes" with base_version "V1" and columns {"body":"milk"}
      Then the outcome of that mutation is in list "accepted" with status "applied" and code ""
      And that outcome has a server_version different from "V1"
      When client "W" pushes a batch with one update of row "n-5" of table "notes" with base_version "V1" and columns {"body":"milk"}
      Then the outcome of that mutation is in list "rejected" with status "conflict" and code "version_conflict"

    @negative @cap:provision
    Scenario: two writes that share one client_version still get different versions
      When client "W" pushes a batch with one insert of row "n-6" of table "notes" with columns {"owner_id":"alice","body":"a"} and client_version "2026-09-01T08:00:00.000000Z"
      And client "W" pushes a batch with one insert of row "n-7" of table "notes" with columns {"owner_id":"alice","body":"a"} and client_version "2026-09-01T08:00:00.000000Z"
      Then the two applied outcomes have different server_versions
