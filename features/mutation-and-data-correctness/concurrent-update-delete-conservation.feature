@SYNC-MUT-018 @server
Feature: Concurrent Update Delete Conservation
  When several clients try to update or delete the same row from the same
  current version at the same time, exactly one transition may win; every
  other attempt must come back as a conflict that shows the winner's result,
  and the winner's transition must stay in place. Two successes would lose a
  write, a missing outcome would leave a client guessing, and a lost winner
  would contradict the outcome the winner was given. The harness orders races
  with a gate (a BEFORE trigger that holds the first push until the harness
  opens it) and also runs unordered races, then checks the outcomes against
  the operation and row-state matrix and the final row.

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
    And client "X" of user "alice" has connected
    And the server holds these "notes" rows, created by client "W":
      | id  | owner_id | body | version |
      | n-1 | alice    | milk | V1      |
    And the server holds these "tasks" rows, created by client "W":
      | id  | owner_id | title    | version |
      | t-1 | alice    | file tax | T1      |

  Rule: of concurrent update and delete attempts from the same current base_version at most one applies

    @cap:provision @cap:sourceSql
    Scenario Outline: <first> held at the gate beats <second> from the same base on table "<table>"
      Given table "<table>" has a gate trigger that holds the first push write of row "<pk>" until the harness opens the gate
      When client "W" starts pushing <first> of row "<pk>" of table "<table>" with base_version "<base>"
      And the push of client "W" is held at the gate
      And client "X" starts pushing <second> of row "<pk>" of table "<table>" with base_version "<base>"
      And the harness opens the gate
      Then the outcome for client "W" is "applied"
      And the outcome for client "X" is a conflict with code "<loser code>"

      Examples:
        | table | pk  | base | first                          | second                        | loser code       |
        | notes | n-1 | V1   | an update setting body "W"     | a delete                      | version_conflict |
        | notes | n-1 | V1   | a delete                       | an update setting body "X"    | row_deleted      |
        | notes | n-1 | V1   | an update setting body "W"     | an update setting body "X"    | version_conflict |
        | notes | n-1 | V1   | a delete                       | a delete                      | row_deleted      |
        | tasks | t-1 | T1   | a delete                       | an update setting title "X"   | row_deleted      |
        | tasks | t-1 | T1   | an update setting title "W"    | a delete                      | version_conflict |

  Rule: every loser receives the current authoritative conflict outcome

    @cap:provision @cap:sourceSql
    Scenario Outline: the loser's conflict shows the winner's <state>
      Given table "<table>" has a gate trigger that holds the first push write of row "<pk>" until the harness opens the gate
      When client "W" starts pushing <first> of row "<pk>" of table "<table>" with base_version "<base>"
      And the push of client "W" is held at the gate
      And client "X" starts pushing <second> of row "<pk>" of table "<table>" with base_version "<base>"
      And the harness opens the gate
      Then the server_version of the loser's conflict equals the server_version of the winner's applied outcome
      And the loser's conflict carries <loser row>

      Examples:
        | state                   | table | pk  | base | first                       | second                      | loser row                                                              |
        | updated row             | notes | n-1 | V1   | an update setting body "W"  | a delete                    | a server_row equal to the winner's server_row, with body "W"           |
        | tombstone               | notes | n-1 | V1   | a delete                    | an update setting body "X"  | a server_row equal to the winner's tombstone, with deleted_at not null |
        | fence-only delete       | tasks | t-1 | T1   | a delete                    | an update setting title "X" | no server_row and no row_checksum                                      |

  Rule: two successes, a missing outcome or a lost winning transition is never observed

    @negative @property @cap:provision
    Scenario: for many unordered races exactly one writer wins and its transition survives
      When the harness runs 50 generated rounds on a fresh row of table "notes", each racing 2 to 8 clients of user "alice" that push at the same moment an update (with a body naming the client) or a delete, all from the row's version at the start of the round
      Then every push of every round answers 200 with one outcome for its mutation
      And every round has exactly one "applied" outcome
      And every other outcome of the round is a conflict with code "version_conflict" or "row_deleted" whose server_version is the winner's
      And after every round the server holds the row as the winner left it, at the winner's server_version

    @negative @cap:provision
    Scenario: sixteen concurrent pushes from one base leave one winner and fifteen losers that see it
      Given clients "C1" to "C16" of user "alice" have connected
      When clients "C1" to "C16" push at the same moment, all from base_version "V1", an update of row "n-1" of table "notes" with a body naming the client or a delete, updates and deletes alternating
      Then every push of every round answers 200 with one outcome for its mutation
      And every round has exactly one "applied" outcome
      And every other outcome of the round is a conflict with code "version_conflict" or "row_deleted" whose server_version is the winner's
      And after every round the server holds the row as the winner left it, at the winner's server_version

    @negative @cap:provision
    Scenario: the winner's transition is delivered by pull, not the loser's
      Given client "X" has rebuilt every scope it is assigned
      And table "notes" has a gate trigger that holds the first push write of row "n-1" until the harness opens the gate
      When client "W" starts pushing an update setting body "W" of row "n-1" of table "notes" with base_version "V1"
      And the push of client "W" is held at the gate
      And client "X" starts pushing a delete of row "n-1" of table "notes" with base_version "V1"
      And the harness opens the gate
      And capture has materialized every committed source transaction
      And client "X" pulls
      Then the pull response lists exactly these changes:
        | scope      | table | op     | pk  |
        | user:alice | notes | upsert | n-1 |
      And the pulled row "n-1" has body "W", deleted_at null and the server_version of client "W"'s applied outcome
