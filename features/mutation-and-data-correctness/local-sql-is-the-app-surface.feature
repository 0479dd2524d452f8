@SYNC-MUT-001 @client
Feature: Local SQL Is The App Surface
  An application using Synchro reads and writes its synced tables with plain
  SQL against the local SQLite database, and that is all it has to do: the
  client captures every insert, update and delete in the same local
  transaction and syncs it through the protocol. A client that needs a
  separate write call, an upload endpoint or a custom API for some synced
  table breaks that boundary. The harness drives the client only through its
  application SQL surface and the sync call, and checks that every CRUD
  operation on every registered table reaches the server, that reads see
  local and server state, and that no request leaves the client except the
  protocol endpoints.

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
    And client "A" of user "alice" has connected and rebuilt every assigned scope

  Rule: every synced CRUD operation can be performed by reading and writing local SQLite

    @cap:provision @cap:sourceSql
    Scenario Outline: insert, update and delete on table "<table>" through local SQL reach the server
      When client "A" executes SQL:
        """
        <insert>
        """
      And client "A" syncs
      And client "A" executes SQL:
        """
        <update>
        """
      And client "A" syncs
      And client "A" executes SQL:
        """
        <delete>
        """
      And client "A" syncs
      Then the proxy recorded pushes from client "A" carrying, in this order, operations "insert", "update" and "delete" of row "<pk>" of table "<table>"
      And every pushed mutation of client "A" was accepted
      And the source table on the server holds row "<pk>" of table "<table>" <final state>

      Examples:
        | table | pk  | insert                                                                  | update                                              | delete                                   | final state     |
        | notes | n-1 | INSERT INTO notes (id, owner_id, body) VALUES ('n-1', 'alice', 'milk')  | UPDATE notes SET body = 'oat milk' WHERE id = 'n-1' | DELETE FROM notes WHERE id = 'n-1'       | as a tombstone  |
        | tasks | t-1 | INSERT INTO tasks (id, owner_id, title) VALUES ('t-1', 'alice', 'tax')  | UPDATE tasks SET done = 1 WHERE id = 't-1'          | DELETE FROM tasks WHERE id = 't-1'       | as deleted      |

    @cap:provision
    Scenario: rows written by another client are read with local SQL after a sync
      Given client "W" of user "alice" has connected
      And client "W" has pushed a batch with:
        | mutation_id                          | operation | table | pk  | base_version | owner_id | body  |
        | 01a00001-0000-4000-8000-000000000001 | insert    | notes | n-2 |              | alice    | bread |
      And capture has materialized every committed source transaction
      When client "A" syncs
      Then client "A" query "SELECT body FROM notes WHERE id = 'n-2'" returns:
        | body  |
        | bread |

    @cap:provision
    Scenario: a local write is readable at once, before any sync
      When client "A" executes SQL:
        """
        INSERT INTO tasks (id, owner_id, title) VALUES ('t-2', 'alice', 'call vet')
        """
      Then client "A" query "SELECT title FROM tasks WHERE id = 't-2'" returns:
        | title    |
        | call vet |
      And the proxy recorded no request from client "A" since the write

  Rule: no registered synced table requires a separate application write API

    @negative @cap:provision
    Scenario Outline: a plain SQL <operation> on a synced table is accepted by the local database and captured
      Given client "A" executes SQL:
        """
        INSERT INTO notes (id, owner_id, body) VALUES ('n-3', 'alice', 'salt')
        """
      And client "A" syncs
      When client "A" executes SQL:
        """
        <statement>
        """
      Then the statement succeeds
      And client "A" shows one new mutation record with operation "<operation>" for row "n-3" of table "notes"

      Examples:
        | operation | statement                                          |
        | update    | UPDATE notes SET price = '2.5' WHERE id = 'n-3'    |
        | delete    | DELETE FROM notes WHERE id = 'n-3'                 |

    @negative @cap:provision
    Scenario: the only requests a syncing client makes go to the protocol endpoints
      When client "A" executes SQL:
        """
        INSERT INTO notes (id, owner_id, body) VALUES ('n-4', 'alice', 'jam');
        UPDATE notes SET body = 'plum jam' WHERE id = 'n-4';
        INSERT INTO tasks (id, owner_id, title) VALUES ('t-4', 'alice', 'shop');
        DELETE FROM tasks WHERE id = 't-4';
        """
      And client "A" syncs
      Then every request the proxy recorded from client "A" went to POST /sync/connect, /sync/push, /sync/pull or /sync/rebuild
      And the harness made no call to client "A" other than open, exec, query, sync and inspect
