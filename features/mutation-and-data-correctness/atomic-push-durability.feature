@SYNC-MUT-012 @server
Feature: Atomic Push Durability
  The first execution of a push is one database transaction: the batch claim
  and its canonical response, every mutation outcome, every accepted source
  write, every version transition and every write fence commit together or not
  at all. Otherwise a client could be told to retry while part of its batch is
  already committed, and the retry would meet its own writes as conflicts. The
  harness runs mixed batches that must commit their accepted part, and batches
  in which an operational fault hits the last mutation, and checks that the
  503 leaves no row, version, fence or ledger entry behind. It also kills the
  server process (SIGKILL) while a push waits inside its transaction at its
  last mutation: nothing of that push may be committed, and the retry is one
  fresh execution whose replay gives the same answer.

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
    And client "W" of user "alice" has connected
    And the server holds these "notes" rows, created by client "W":
      | id  | owner_id | body  | version |
      | n-1 | alice    | milk  | V1      |
      | n-3 | alice    | bread | V3      |

  Rule: a first execution commits its response, outcomes, accepted source writes, version transitions and write fences in one transaction

    @cap:provision
    Scenario: a mixed batch commits its accepted writes together with the stored response
      When client "W" pushes batch "12b00001-0000-4000-8000-000000000001" with:
        | mutation_id                          | operation | table | pk  | base_version | owner_id | body  |
        | 12a00001-0000-4000-8000-000000000001 | insert    | notes | n-2 |              | alice    | eggs  |
        | 12a00002-0000-4000-8000-000000000002 | update    | notes | n-3 | "sv-stale"   |          | rye   |
        | 12a00003-0000-4000-8000-000000000003 | update    | notes | n-1 | V1           |          | kefir |
      Then the response status is 200
      And the accepted list holds mutations "12a00001-0000-4000-8000-000000000001, 12a00003-0000-4000-8000-000000000003" in this order
      And the rejected list holds mutations "12a00002-0000-4000-8000-000000000002" in this order
      And the server holds row "n-2" of table "notes" with body "eggs" at the version returned for mutation "12a00001-0000-4000-8000-000000000001"
      And the server holds row "n-1" of table "notes" with body "kefir" at the version returned for mutation "12a00003-0000-4000-8000-000000000003"
      And the server holds row "n-3" of table "notes" with body "bread" at version "V3"
      When client "W" resends batch "12b00001-0000-4000-8000-000000000001" unchanged
      Then the response body is byte-identical to the first response to batch "12b00001-0000-4000-8000-000000000001"

  Rule: an operational failure rolls the whole first execution back and leaves nothing behind

    @cap:provision @cap:sourceSql
    Scenario Outline: a <sqlstate> raised by the last mutation rolls back every earlier mutation
      Given table "notes" has a source trigger that raises SQLSTATE "<sqlstate>" when a row's body becomes "FAULT"
      When client "W" pushes batch "12b00002-0000-4000-8000-000000000002" with:
        | mutation_id                          | operation | table | pk  | base_version | owner_id | body  |
        | 12a00004-0000-4000-8000-000000000004 | insert    | notes | n-4 |              | alice    | figs  |
        | 12a00005-0000-4000-8000-000000000005 | update    | notes | n-1 | V1           |          | soy   |
        | 12a00006-0000-4000-8000-000000000006 | update    | notes | n-3 | V3           |          | FAULT |
      Then the response status is 503 with error code "temporary_unavailable"
      And the error body has code "temporary_unavailable", a nonempty message, "retryable": true and no member "accepted" or "rejected"
      And the response has a valid "Retry-After" header
      And the server holds no row "n-4" of table "notes"
      And the server holds row "n-1" of table "notes" with body "milk" at version "V1"
      And the server holds row "n-3" of table "notes" with body "bread" at version "V3"

      Examples:
        | sqlstate |
        | 40001    |
        | 40P01    |
        | 55P03    |

    @cap:provision @cap:sourceSql
    Scenario: the same request after the fault is removed is a fresh first execution
      Given table "notes" has a source trigger that raises SQLSTATE "40001" when a row's body becomes "FAULT"
      And client "W" has pushed batch "12b00003-0000-4000-8000-000000000003" and received status 503:
        | mutation_id                          | operation | table | pk  | base_version | owner_id | body  |
        | 12a00007-0000-4000-8000-000000000007 | insert    | notes | n-7 |              | alice    | oats  |
        | 12a00008-0000-4000-8000-000000000008 | update    | notes | n-1 | V1           |          | FAULT |
      When the harness removes the fault trigger from table "notes"
      And client "W" resends batch "12b00003-0000-4000-8000-000000000003" unchanged
      Then the response status is 200
      And the accepted list holds mutations "12a00007-0000-4000-8000-000000000007, 12a00008-0000-4000-8000-000000000008" in this order
      And the server holds row "n-1" of table "notes" with body "FAULT" at the version returned for mutation "12a00008-0000-4000-8000-000000000008"

    @cap:provision @cap:sourceSql
    Scenario: a server killed inside the push transaction leaves nothing behind, and the retry is one fresh execution
      Given table "notes" has a source trigger that waits at a harness gate when a row's body becomes "HOLD"
      When client "W" sends batch "12b00007-0000-4000-8000-000000000007" in the background with:
        | mutation_id                          | operation | table | pk   | base_version | owner_id | body |
        | 12a00010-0000-4000-8000-000000000010 | insert    | notes | n-11 |              | alice    | figs |
        | 12a00011-0000-4000-8000-000000000011 | update    | notes | n-1  | V1           |          | soy  |
        | 12a00012-0000-4000-8000-000000000012 | update    | notes | n-3  | V3           |          | HOLD |
      And the server process is killed with SIGKILL while that push waits at the gate inside its transaction
      And the harness opens the gate and the server process is started again
      Then the server holds no row "n-11" of table "notes"
      And the server holds row "n-1" of table "notes" with body "milk" at version "V1"
      And the server holds row "n-3" of table "notes" with body "bread" at version "V3"
      When client "W" resends batch "12b00007-0000-4000-8000-000000000007" unchanged
      Then the response status is 200
      And the accepted list holds mutations "12a00010-0000-4000-8000-000000000010, 12a00011-0000-4000-8000-000000000011, 12a00012-0000-4000-8000-000000000012" in this order
      And the server holds row "n-3" of table "notes" with body "HOLD" at the version returned for mutation "12a00012-0000-4000-8000-000000000012"
      When client "W" resends batch "12b00007-0000-4000-8000-000000000007" unchanged
      Then the response body is byte-identical to the previous response to batch "12b00007-0000-4000-8000-000000000007"

  Rule: a retryable operational response never stands beside a committed subset

    @negative @cap:provision @cap:sourceSql
    Scenario: after a 503 no fence or version of the batch survives
      Given table "notes" has a source trigger that raises SQLSTATE "40001" when a row's body becomes "FAULT"
      And client "W" has pushed batch "12b00004-0000-4000-8000-000000000004" and received status 503:
        | mutation_id                          | operation | table | pk  | base_version | owner_id | body  |
        | 12a00009-0000-4000-8000-000000000009 | insert    | notes | n-9 |              | alice    | plums |
        | 12a0000a-0000-4000-8000-00000000000a | delete    | notes | n-3 | V3           |          |       |
        | 12a0000b-0000-4000-8000-00000000000b | update    | notes | n-1 | V1           |          | FAULT |
      And client "X" of user "alice" has connected
      When client "X" pushes a batch with:
        | mutation_id                          | operation | table | pk  | base_version | owner_id | body   |
        | 12a0000c-0000-4000-8000-00000000000c | insert    | notes | n-9 |              | alice    | pears  |
        | 12a0000d-0000-4000-8000-00000000000d | update    | notes | n-3 | V3           |          | spelt  |
      Then the response status is 200
      And the accepted list holds mutations "12a0000c-0000-4000-8000-00000000000c, 12a0000d-0000-4000-8000-00000000000d" in this order

    @negative @cap:provision @cap:sourceSql
    Scenario: after a 503 the mutation identities of the batch are unclaimed
      Given table "notes" has a source trigger that raises SQLSTATE "40001" when a row's body becomes "FAULT"
      And client "W" has pushed batch "12b00005-0000-4000-8000-000000000005" and received status 503:
        | mutation_id                          | operation | table | pk   | base_version | owner_id | body  |
        | 12a0000e-0000-4000-8000-00000000000e | insert    | notes | n-10 |              | alice    | kale  |
        | 12a0000f-0000-4000-8000-00000000000f | update    | notes | n-1  | V1           |          | FAULT |
      When client "W" pushes batch "12b00006-0000-4000-8000-000000000006" with:
        | mutation_id                          | operation | table | pk   | base_version | owner_id | body  |
        | 12a0000e-0000-4000-8000-00000000000e | insert    | notes | n-10 |              | alice    | chard |
      Then the response status is 200
      And the accepted list holds mutations "12a0000e-0000-4000-8000-00000000000e" in this order
      And the server holds row "n-10" of table "notes" with body "chard"
