@SYNC-MUT-002 @server @client
Feature: Synced CRUD Authority
  Creating, updating and deleting rows of a registered table is defined by
  Synchro's own mutation contract: the push operations insert, update and
  delete, their exact shapes, and the operation and row-state matrix that
  decides each outcome. Neither server nor client may hand those semantics to
  an application-specific transport (an upsert endpoint, a create-or-revive
  call, a last-write-wins rule): every registered table behaves the same way
  and every implementation can be checked against one table. The harness
  drives every cell of the matrix on a soft-delete and a hard-delete table
  through POST /sync/push, and checks that a client turns local CRUD into
  exactly these wire operations.

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

  Rule: create, update and delete of every registered table are executed through the canonical mutation contract

    @server @cap:provision
    Scenario Outline: <op> on a <state> row of table "<table>" gives <result>
      Given client "W" of user "alice" has connected
      And row "<pk>" of table "<table>" is <state> on the server
      When client "W" pushes a batch with one <op> of row "<pk>" of table "<table>" with base_version <base> and the columns the operation requires
      Then the response status is 200
      And the outcome of that mutation has status "<status>" and code "<code>"
      And the server holds row "<pk>" of table "<table>" <after>

      Examples: soft-delete table
        | table | pk  | state                    | op     | base        | status   | code               | result                 | after                           |
        | notes | n-1 | absent                   | insert | absent      | applied  |                    | a new row              | live at a new version           |
        | notes | n-1 | absent                   | update | "sv-any"    | conflict | row_not_found      | no implicit insert     | absent                          |
        | notes | n-1 | absent                   | delete | "sv-any"    | conflict | row_not_found      | no implicit insert     | absent                          |
        | notes | n-1 | live                     | insert | absent      | conflict | row_already_exists | no implicit update     | live at its previous version    |
        | notes | n-1 | live                     | update | current     | applied  |                    | a patched row          | live at a new version           |
        | notes | n-1 | live                     | delete | current     | applied  |                    | a tombstone            | as a tombstone at a new version |
        | notes | n-1 | live                     | update | stale       | conflict | version_conflict   | no overwrite           | live at its previous version    |
        | notes | n-1 | live                     | delete | stale       | conflict | version_conflict   | no overwrite           | live at its previous version    |
        | notes | n-1 | deleted (tombstone)      | insert | absent      | conflict | row_deleted        | no resurrection        | as a tombstone                  |
        | notes | n-1 | deleted (tombstone)      | update | current     | conflict | row_deleted        | no resurrection        | as a tombstone                  |
        | notes | n-1 | deleted (tombstone)      | delete | current     | conflict | row_deleted        | no second delete       | as a tombstone                  |

      Examples: hard-delete table
        | table | pk  | state                    | op     | base        | status   | code               | result                 | after                           |
        | tasks | t-1 | live                     | delete | current     | applied  |                    | a fence-only delete    | deleted at a new version        |
        | tasks | t-1 | deleted (fence only)     | insert | absent      | conflict | row_deleted        | no resurrection        | deleted                         |
        | tasks | t-1 | deleted (fence only)     | update | current     | conflict | row_deleted        | no resurrection        | deleted                         |
        | tasks | t-1 | deleted (fence only)     | delete | current     | conflict | row_deleted        | no second delete       | deleted                         |

    @client @cap:provision
    Scenario: a client turns local CRUD into insert, update and delete mutations of the exact shapes
      Given client "A" of user "alice" has connected and rebuilt every assigned scope
      When client "A" executes SQL:
        """
        INSERT INTO notes (id, owner_id, body, price) VALUES ('n-5', 'alice', 'milk', '2')
        """
      And client "A" syncs
      And client "A" executes SQL:
        """
        UPDATE notes SET price = NULL, body = 'oat' WHERE id = 'n-5'
        """
      And client "A" syncs
      And client "A" executes SQL:
        """
        DELETE FROM notes WHERE id = 'n-5'
        """
      And client "A" syncs
      Then the pushed insert of row "n-5" has no base_version and columns {"owner_id":"alice","body":"milk","price":"2"} keyed by field ID
      And the pushed update of row "n-5" has base_version equal to the insert's returned server_version and columns holding exactly body "oat" and price null
      And the pushed delete of row "n-5" has base_version equal to the update's returned server_version and no columns member

  Rule: semantics of an application-specific transport contract are never used in their place

    @server @negative @cap:provision
    Scenario Outline: the push operation "<op>" is refused as not part of the contract
      Given client "W" of user "alice" has connected
      When client "W" sends a push request whose only mutation has "op": <op> on row "n-1" of table "notes" with columns {"body":"milk"}
      Then the response status is 400 with error code "invalid_request"
      And no durable state changed on the server
      When client "W" sends the same batch_id again with "op": "insert"
      Then the response status is 200

      Examples:
        | op       |
        | "create" |
        | "upsert" |
        | "Insert" |
        | ""       |
        | null     |

    @client @negative @cap:provision
    Scenario: a client never sends create, upsert or a write to an application endpoint
      Given client "A" of user "alice" has connected and rebuilt every assigned scope
      When client "A" executes SQL:
        """
        INSERT INTO tasks (id, owner_id, title) VALUES ('t-5', 'alice', 'tax');
        INSERT INTO notes (id, owner_id, body) VALUES ('n-6', 'alice', 'salt')
        """
      And client "A" syncs
      And client "A" executes SQL:
        """
        UPDATE tasks SET title = 'taxes' WHERE id = 't-5';
        DELETE FROM notes WHERE id = 'n-6'
        """
      And client "A" syncs
      Then every mutation the proxy recorded from client "A" has "op" "insert", "update" or "delete"
      And every write request the proxy recorded from client "A" went to POST /sync/push
