@SYNC-MUT-004 @client
Feature: Canonical Server Outcome
  A push outcome that carries an authoritative row, a tombstone, a
  server_version or an authoritative absence tells the client what the server
  now holds. The client must make that its canonical local base (the row
  version it will send as base_version next, and the server-justified row
  state) while keeping any later local intent the user has authored on top of
  it. A client that marks the mutation finished but keeps an old base would
  send its next write from a version the server has already moved past. The
  harness creates each kind of outcome against a real server, then inspects
  the client's stored row versions and local rows and watches the
  base_version of the next push on the wire.

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
    And client "W" of user "alice" has connected
    And the server holds these "notes" rows, created by client "W":
      | id  | owner_id | body  | version |
      | n-1 | alice    | milk  | V1      |
    And the server holds these "tasks" rows, created by client "W":
      | id  | owner_id | title    | version |
      | t-1 | alice    | file tax | T1      |
    And capture has materialized every committed source transaction
    And client "A" syncs

  Rule: an outcome carrying an authoritative row state or server_version becomes the client's canonical local base

    @cap:provision
    Scenario Outline: after <case>, the stored version and the local row follow the outcome
      Given <server change>
      When client "A" executes SQL "<statement>"
      And the proxy holds the next pull response to client "A"
      And client "A" syncs in the background
      Then the push outcome the proxy delivered to client "A" for that mutation has status "<status>" and code "<code>"
      And client "A" stores, for row "<pk>" of table "<table>", the server_version of that outcome
      And client "A" query of row "<pk>" of table "<table>" returns <local row>

      Examples:
        | case                                 | server change                                                    | statement                                                          | status   | code               | table | pk  | local row                                        |
        | an applied update                    | nothing changed on the server                                    | UPDATE notes SET body = 'oat' WHERE id = 'n-1'                     | applied  |                    | notes | n-1 | the outcome's server_row                         |
        | a version_conflict                   | client "W" updates row "n-1" of table "notes" from "V1" setting body "rye"        | UPDATE notes SET body = 'oat' WHERE id = 'n-1'                     | conflict | version_conflict   | notes | n-1 | the outcome's server_row, with body "rye"        |
        | a row_already_exists conflict        | client "W" inserts row "n-2" of table "notes" with body "figs"                    | INSERT INTO notes (id, owner_id, body) VALUES ('n-2', 'alice', 'x') | conflict | row_already_exists | notes | n-2 | the outcome's server_row, with body "figs"       |
        | a row_deleted conflict on a tombstone | client "W" deletes row "n-1" of table "notes" from "V1"                          | UPDATE notes SET body = 'oat' WHERE id = 'n-1'                     | conflict | row_deleted        | notes | n-1 | the outcome's tombstone, with deleted_at not null |

    @cap:provision
    Scenario: after a row_deleted conflict on a fence-only delete the stored version is the fence's and the row is gone
      Given client "W" deletes row "t-1" of table "tasks" from "T1"
      When client "A" executes SQL "UPDATE tasks SET title = 'taxes' WHERE id = 't-1'"
      And the proxy holds the next pull response to client "A"
      And client "A" syncs in the background
      Then the push outcome the proxy delivered to client "A" for that mutation has status "conflict" and code "row_deleted" and no server_row
      And client "A" stores, for row "t-1" of table "tasks", the server_version of that outcome
      And client "A" query "SELECT id FROM tasks WHERE id = 't-1'" returns no row

    @cap:provision @cap:sourceSql
    Scenario: after a rowless row_not_found the server-justified local row is removed
      Given the operator removes row "n-1" of table "notes" and its deletion fence, so that the server holds no trace of it
      When client "A" executes SQL "UPDATE notes SET body = 'oat' WHERE id = 'n-1'"
      And client "A" syncs
      Then the push outcome the proxy delivered to client "A" for that mutation has status "conflict" and code "row_not_found" and no server_version
      And client "A" query "SELECT id FROM notes WHERE id = 'n-1'" returns no row
      And client "A" stores no server_version for row "n-1" of table "notes"

    @cap:provision
    Scenario: a terminal rejection carries no row, so the local row and stored version stay
      When client "A" executes SQL "UPDATE notes SET price = '1.234' WHERE id = 'n-1'"
      And client "A" syncs
      Then the push outcome the proxy delivered to client "A" for that mutation has status "rejected_terminal" and code "validation_failed"
      And client "A" stores, for row "n-1" of table "notes", the server_version "V1"

  Rule: reconciling to the server outcome preserves later local intent

    @cap:provision
    Scenario: a conflict reconciles the base while a later unsent update stays on top
      Given client "W" updates row "n-1" of table "notes" from "V1" setting body "rye"
      And client "A" executes SQL "UPDATE notes SET body = 'oat' WHERE id = 'n-1'"
      When the proxy holds the next push response to client "A"
      And client "A" syncs in the background
      And client "A" executes SQL "UPDATE notes SET price = '4' WHERE id = 'n-1'"
      And the proxy releases the held response
      Then client "A" stores, for row "n-1" of table "notes", the server_version of client "W"'s update
      And client "A" query "SELECT body, price FROM notes WHERE id = 'n-1'" returns:
        | body | price |
        | rye  | 4     |
      And client "A" shows the update of row "n-1" setting price "4" with status "blocked_by_predecessor" and its authored fields intact

    @cap:provision
    Scenario: an applied predecessor refreshes the base of a later unsent update, which keeps its ID
      Given client "A" executes SQL "UPDATE notes SET body = 'oat' WHERE id = 'n-1'"
      When the proxy holds the next push response to client "A"
      And client "A" syncs in the background
      And client "A" executes SQL "UPDATE notes SET price = '4' WHERE id = 'n-1'"
      And the proxy releases the held response
      And client "A" syncs
      Then the second push of client "A" carries the price update with the mutation ID it was captured with and base_version equal to the server_version returned for the body update
      And client "A" query "SELECT body, price FROM notes WHERE id = 'n-1'" returns:
        | body | price |
        | oat  | 4     |

  Rule: a terminal mark beside a conflicting canonical base or version is never observed

    @negative @cap:provision
    Scenario: the next write after a conflict is sent from the conflict's version, not the old base
      Given client "W" updates row "n-1" of table "notes" from "V1" setting body "rye"
      And client "A" executes SQL "UPDATE notes SET body = 'oat' WHERE id = 'n-1'"
      And client "A" syncs
      When client "A" executes SQL "UPDATE notes SET body = 'soy' WHERE id = 'n-1'"
      And client "A" syncs
      Then the last push of client "A" carries the update of row "n-1" with base_version equal to the server_version of client "W"'s update, not "V1"
      And that update is accepted

    @negative @cap:provision
    Scenario: no stored row version differs from the version of the last outcome or pulled change for its row
      Given client "W" updates row "n-1" of table "notes" from "V1" setting body "rye"
      And client "A" executes SQL "UPDATE notes SET body = 'oat' WHERE id = 'n-1'"
      And client "A" executes SQL "INSERT INTO tasks (id, owner_id, title) VALUES ('t-2', 'alice', 'vet')"
      When the proxy holds the next pull response to client "A"
      And client "A" syncs in the background
      Then for every row with a terminal mutation, client "A" stores the server_version of the latest outcome or pulled change the proxy delivered for that row
