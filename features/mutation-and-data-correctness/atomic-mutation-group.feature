@SYNC-MUT-014 @server
Feature: Atomic Mutation Group
  A push request marked "atomic": true asks for all of its mutations or none.
  The server evaluates the group in request order, stops at the first outcome
  that is not applied, and rolls back every source write, version transition
  and write fence the group made. The failing mutation keeps its own status
  and code (a conflict shows the committed row as it is after the rollback);
  every other mutation gets rejected_terminal with code atomic_batch_rejected
  and message "atomic batch rejected". The harness pushes valid and failing
  groups, probes the rows and fences the group touched, watches whether an
  open rebuild continuation survives (the accepted-write epoch only moves when
  writes commit), and checks that non-atomic responses never use the atomic
  code.

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
      | id   | owner_id | body  | version |
      | n-11 | alice    | milk  | V11     |
      | n-13 | alice    | bread | V13     |

  Rule: a first execution of an atomic request commits the source writes of every mutation or of none

    @cap:provision
    Scenario: a group whose mutations all apply commits all of them
      When client "W" pushes atomic batch "14b00001-0000-4000-8000-000000000001" with:
        | mutation_id                          | operation | table | pk   | base_version | owner_id | body  |
        | 14a00001-0000-4000-8000-000000000001 | insert    | notes | n-10 |              | alice    | eggs  |
        | 14a00002-0000-4000-8000-000000000002 | update    | notes | n-11 | V11          |          | kefir |
        | 14a00003-0000-4000-8000-000000000003 | delete    | notes | n-13 | V13          |          |       |
      Then the response status is 200
      And the accepted list holds mutations "14a00001-0000-4000-8000-000000000001, 14a00002-0000-4000-8000-000000000002, 14a00003-0000-4000-8000-000000000003" in this order
      And the rejected list is empty
      And the server holds row "n-10" of table "notes" with body "eggs"
      And the server holds row "n-11" of table "notes" with body "kefir"
      And the source table on the server holds row "n-13" of table "notes" as a tombstone

  Rule: the server stops at the first outcome that is not applied and rolls back every source write, version transition and write fence of the group

    @cap:provision
    Scenario: a conflict in the middle undoes the earlier write and leaves the later mutation unevaluated
      When client "W" pushes atomic batch "14b00002-0000-4000-8000-000000000002" with:
        | mutation_id                          | operation | table | pk   | base_version | owner_id | body  | updated_at                  |
        | 14a00004-0000-4000-8000-000000000004 | insert    | notes | n-10 |              | alice    | eggs  |                             |
        | 14a00005-0000-4000-8000-000000000005 | update    | notes | n-11 | "sv-stale"   |          | soy   |                             |
        | 14a00006-0000-4000-8000-000000000006 | update    | notes | n-13 | V13          |          | rye   | 2026-09-01T08:00:00.000000Z |
      Then the response status is 200
      And the accepted list is empty
      And the push outcomes are:
        | mutation_id                          | list     | status            | code                  |
        | 14a00004-0000-4000-8000-000000000004 | rejected | rejected_terminal | atomic_batch_rejected |
        | 14a00005-0000-4000-8000-000000000005 | rejected | conflict          | version_conflict      |
        | 14a00006-0000-4000-8000-000000000006 | rejected | rejected_terminal | atomic_batch_rejected |
      And the server holds no row "n-10" of table "notes"
      And the server holds row "n-13" of table "notes" with body "bread" at version "V13"

    @cap:provision
    Scenario: a rolled-back insert leaves no write fence behind
      Given client "W" has pushed atomic batch "14b00003-0000-4000-8000-000000000003" with:
        | mutation_id                          | operation | table | pk   | base_version | owner_id | body |
        | 14a00007-0000-4000-8000-000000000007 | insert    | notes | n-10 |              | alice    | eggs |
        | 14a00008-0000-4000-8000-000000000008 | insert    | notes | n-11 |              | alice    | dup  |
      And client "X" of user "alice" has connected
      When client "X" pushes a batch with:
        | mutation_id                          | operation | table | pk   | base_version | owner_id | body |
        | 14a00009-0000-4000-8000-000000000009 | insert    | notes | n-10 |              | alice    | figs |
      Then the push outcome of mutation "14a00009-0000-4000-8000-000000000009" is "applied"

  Rule: the failing mutation keeps its status and code, and a failing conflict carries committed state read after the rollback

    @cap:provision @cap:sourceSql
    Scenario: a conflict on a child row shows the committed child, not the cascaded group write
      Given a registered table "lists" with columns:
        | column   | type   | key | writable | lifecycle |
        | id       | string | yes | no       |           |
        | owner_id | string | no  | yes      |           |
        | name     | string | no  | yes      |           |
      And table "lists" places each row in scope "user:{owner_id}"
      And a registered table "items" with columns:
        | column   | type   | key | writable | lifecycle |
        | id       | string | yes | no       |           |
        | owner_id | string | no  | yes      |           |
        | list_id  | string | no  | yes      |           |
        | label    | string | no  | yes      |           |
      And table "items" places each row in scope "user:{owner_id}"
      And the harness commits on the source database:
        """
        ALTER TABLE public.items ADD FOREIGN KEY (list_id) REFERENCES public.lists (id) ON DELETE CASCADE;
        """
      And client "W" has connected again and received the new schema
      And the server holds these "lists" rows, created by client "W":
        | id  | owner_id | name    | version |
        | l-1 | alice    | grocery | L1      |
      And the server holds these "items" rows, created by client "W":
        | id  | owner_id | list_id | label | version |
        | i-1 | alice    | l-1     | apple | I1      |
      When client "W" pushes atomic batch "14b00004-0000-4000-8000-000000000004" with:
        | mutation_id                          | operation | table | pk  | base_version | label |
        | 14a0000a-0000-4000-8000-00000000000a | delete    | lists | l-1 | L1           |       |
        | 14a0000b-0000-4000-8000-00000000000b | update    | items | i-1 | "sv-stale"   | pear  |
      Then the response status is 200
      And the rejected outcome of mutation "14a0000b-0000-4000-8000-00000000000b" has status "conflict", code "version_conflict" and server_version "I1"
      And the rejected outcome of mutation "14a0000b-0000-4000-8000-00000000000b" has a server_row with list_id "l-1" and label "apple"
      And the rejected outcome of mutation "14a0000a-0000-4000-8000-00000000000a" has status "rejected_terminal" and code "atomic_batch_rejected"
      And the server holds row "l-1" of table "lists" with name "grocery" at version "L1"
      And the server holds row "i-1" of table "items" with label "apple" at version "I1"

    @cap:provision
    Scenario: a terminal rejection keeps its own code inside the group
      When client "W" pushes atomic batch "14b00005-0000-4000-8000-000000000005" with:
        | mutation_id                          | operation | table | pk   | base_version | owner_id | body  | price |
        | 14a0000c-0000-4000-8000-00000000000c | insert    | notes | n-10 |              | alice    | eggs  |       |
        | 14a0000d-0000-4000-8000-00000000000d | update    | notes | n-11 | V11          |          |       | 1.234 |
      Then the response status is 200
      And the push outcomes are:
        | mutation_id                          | list     | status            | code                  |
        | 14a0000c-0000-4000-8000-00000000000c | rejected | rejected_terminal | atomic_batch_rejected |
        | 14a0000d-0000-4000-8000-00000000000d | rejected | rejected_terminal | validation_failed     |

  Rule: every other mutation of a failed group receives rejected_terminal with atomic_batch_rejected

    @cap:provision
    Scenario: the sibling outcomes have the exact atomic_batch_rejected shape and replay byte for byte
      Given client "W" has pushed atomic batch "14b00006-0000-4000-8000-000000000006" with:
        | mutation_id                          | operation | table | pk   | base_version | owner_id | body  |
        | 14a0000e-0000-4000-8000-00000000000e | insert    | notes | n-10 |              | alice    | eggs  |
        | 14a0000f-0000-4000-8000-00000000000f | insert    | notes | n-11 |              | alice    | dup   |
        | 14a00010-0000-4000-8000-000000000010 | insert    | notes | n-12 |              | alice    | salt  |
      Then the rejected outcome of mutation "14a0000e-0000-4000-8000-00000000000e" has exactly the members code, message, mutation_id, outcome_schema, pk, status and table
      And that outcome has status "rejected_terminal", code "atomic_batch_rejected", message "atomic batch rejected" and outcome_schema equal to the request schema
      And the rejected outcome of mutation "14a00010-0000-4000-8000-000000000010" has status "rejected_terminal", code "atomic_batch_rejected" and no member "server_row", "row_checksum", "server_version" or "retryable"
      And the rejected outcome of mutation "14a0000f-0000-4000-8000-00000000000f" has status "conflict", code "row_already_exists" and server_version "V11"
      When client "W" resends batch "14b00006-0000-4000-8000-000000000006" unchanged
      Then the response body is byte-identical to the first response to batch "14b00006-0000-4000-8000-000000000006"

  Rule: a partial commit, a conflict row from rolled-back state, an epoch advance after rollback, or atomic_batch_rejected outside an atomic response is never observed

    @negative @cap:provision
    Scenario: a failed group does not advance the accepted-write epoch
      Given client "W" has received rebuild page 1 of scope "user:alice" with limit 1 and has_more true
      When client "W" pushes atomic batch "14b00007-0000-4000-8000-000000000007" with:
        | mutation_id                          | operation | table | pk   | base_version | owner_id | body |
        | 14a00011-0000-4000-8000-000000000011 | insert    | notes | n-10 |              | alice    | eggs |
        | 14a00012-0000-4000-8000-000000000012 | update    | notes | n-11 | "sv-stale"   |          | soy  |
      And client "W" requests the next rebuild page of scope "user:alice"
      Then the response status is 200

    @cap:provision
    Scenario: a committed group does advance the accepted-write epoch
      Given client "W" has received rebuild page 1 of scope "user:alice" with limit 1 and has_more true
      When client "W" pushes atomic batch "14b00008-0000-4000-8000-000000000008" with:
        | mutation_id                          | operation | table | pk   | base_version | owner_id | body |
        | 14a00013-0000-4000-8000-000000000013 | insert    | notes | n-10 |              | alice    | eggs |
        | 14a00014-0000-4000-8000-000000000014 | update    | notes | n-11 | V11          |          | soy  |
      And client "W" requests the next rebuild page of scope "user:alice"
      Then the response status is 409 with error code "rebuild_restart_required"

    @negative @cap:provision
    Scenario: the same failing mutations without "atomic" never produce atomic_batch_rejected
      When client "W" pushes batch "14b00009-0000-4000-8000-000000000009" with:
        | mutation_id                          | operation | table | pk   | base_version | owner_id | body | price |
        | 14a00015-0000-4000-8000-000000000015 | insert    | notes | n-10 |              | alice    | eggs |       |
        | 14a00016-0000-4000-8000-000000000016 | update    | notes | n-11 | "sv-stale"   |          | soy  |       |
        | 14a00017-0000-4000-8000-000000000017 | update    | notes | n-13 | V13          |          |      | 1.234 |
      Then the response status is 200
      And the push outcomes are:
        | mutation_id                          | list     | status            | code              |
        | 14a00015-0000-4000-8000-000000000015 | accepted | applied           |                   |
        | 14a00016-0000-4000-8000-000000000016 | rejected | conflict          | version_conflict  |
        | 14a00017-0000-4000-8000-000000000017 | rejected | rejected_terminal | validation_failed |
      And no outcome in the response has code "atomic_batch_rejected"

    @negative @cap:provision
    Scenario: a mutation that got atomic_batch_rejected cannot be reused in a non-atomic request
      Given client "W" has pushed atomic batch "14b0000a-0000-4000-8000-00000000000a" with:
        | mutation_id                          | operation | table | pk   | base_version | owner_id | body |
        | 14a00018-0000-4000-8000-000000000018 | insert    | notes | n-10 |              | alice    | eggs |
        | 14a00019-0000-4000-8000-000000000019 | insert    | notes | n-11 |              | alice    | dup  |
      When client "W" pushes batch "14b0000b-0000-4000-8000-00000000000b" with:
        | mutation_id                          | operation | table | pk   | base_version | owner_id | body |
        | 14a00018-0000-4000-8000-000000000018 | insert    | notes | n-10 |              | alice    | eggs |
      Then the response status is 400 with error code "invalid_request"
      And the server holds no row "n-10" of table "notes"

  Rule: only a well-formed atomic request opens a group

    @negative @cap:provision
    Scenario Outline: an atomic request with <defect> is refused before any work
      When client "W" sends a push request whose envelope has <defect>
      Then the response status is 400 with error code "invalid_request"
      And no durable state changed on the server

      Examples:
        | defect                                                                               |
        | "atomic": false and one valid insert of row "n-10"                                   |
        | "atomic": "true" and one valid insert of row "n-10"                                  |
        | "atomic": true, an insert of row "n-10" and an update of row "n-10"                  |
        | "atomic": true and a mutation_id already completed in an earlier batch of client "W" |
