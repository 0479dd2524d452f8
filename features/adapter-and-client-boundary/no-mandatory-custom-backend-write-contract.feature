@SYNC-BOUND-004 @server @client
Feature: No Mandatory Custom Backend Write Contract
  Apps write synced data with plain SQL on the device, and the protocol
  carries those writes to the server. An app must never need its own upload
  endpoint for creates, updates or deletes of a registered table. That would
  bring back a second write path with its own rules for conflicts and
  retries. The harness registers tables with different shapes. It creates,
  updates and deletes rows through application SQL only, and checks that the
  proxy saw nothing but the protocol endpoints and that the server applied
  every write. It also checks that the server applies each operation of every
  registered table from a push alone.

  Background:
    Given a registered table "tasks" with columns:
      | column     | type     | key | nullable |
      | id         | string   | yes | no       |
      | owner_id   | string   | no  | no       |
      | title      | string   | no  | no       |
      | deleted_at | datetime | no  | yes      |
    And table "tasks" marks deletion with column "deleted_at"
    And table "tasks" places each row in scope "user:{owner_id}"
    And a registered table "counters" with columns:
      | column   | type  | key | nullable |
      | id       | int64 | yes | no       |
      | owner_id | string| no  | no       |
      | value    | int   | no  | no       |
    And table "counters" places each row in scope "user:{owner_id}"
    And client "A" of user "alice" has connected and rebuilt every assigned scope
    And client "B" of user "alice" has connected and rebuilt every assigned scope

  Rule: Create, update and delete synchronize through local SQL and the canonical protocol alone

    Scenario Outline: Create, update and delete of "<table>" reach the server and another client through local SQL only
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
      And client "B" syncs
      Then client "B" has the row as updated by client "A"
      When client "A" executes SQL:
        """
        <delete>
        """
      And client "A" syncs
      And client "B" syncs
      Then client "B" shows the row deleted as the table's lifecycle says
      And client "A" inspection shows an accepted "insert", "update" and "delete" for the row, each with its own stable mutation ID
      And every request the proxy recorded from clients "A" and "B" is one of "POST /sync/connect", "POST /sync/push", "POST /sync/pull" and "POST /sync/rebuild"

      Examples:
        | table    | insert                                                                        | update                                               | delete                                  |
        | tasks    | INSERT INTO tasks (id, owner_id, title) VALUES ('t1', 'alice', 'Draft');      | UPDATE tasks SET title = 'Final' WHERE id = 't1';    | DELETE FROM tasks WHERE id = 't1';      |
        | counters | INSERT INTO counters (id, owner_id, value) VALUES (9007199254740993, 'alice', 1); | UPDATE counters SET value = 2 WHERE id = 9007199254740993; | DELETE FROM counters WHERE id = 9007199254740993; |

  Rule: Requiring an application-defined upload endpoint for any registered table is a violation

    @negative
    Scenario Outline: A push alone applies "<op>" on "<table>" with no other endpoint involved
      Given the harness client "H" of user "alice" has connected and rebuilt every assigned scope
      And <precondition>
      When the harness client "H" pushes a batch with one "<op>" mutation on "<table>" for key <key><payload>
      Then the response status is 200
      And the push outcome of that mutation is "applied"
      And the next pull of client "B" reflects that "<op>" on "<table>"

      Examples:
        | table    | op     | key                     | precondition                                        | payload                                  |
        | tasks    | insert | "t2"                    | nothing else is required                            | with columns owner "alice", title "New"  |
        | tasks    | update | "t2"                    | task "t2" exists at a version the harness knows     | with title "Changed" and that base version |
        | tasks    | delete | "t2"                    | task "t2" exists at a version the harness knows     | with that base version                   |
        | counters | insert | "9007199254740993"      | nothing else is required                            | with columns owner "alice", value 1      |
        | counters | update | "9007199254740993"      | counter "9007199254740993" exists at a known version | with value 2 and that base version       |
        | counters | delete | "9007199254740993"      | counter "9007199254740993" exists at a known version | with that base version                   |
