@SYNC-MUT-015 @server @internal
Feature: Push Unit Constraint Boundary
  PostgreSQL checks deferred constraints at commit, but a push must know every
  outcome before it commits its response. So the server cuts a push into units
  (one mutation of a non-atomic request, or the whole group of an atomic one),
  runs each unit with every deferrable constraint deferred, and checks them all
  at the end of the unit. A unit-end failure of class 22 or 23 rolls back only
  that unit and becomes rejected_terminal validation_failed on its last
  mutation; the same constraint behaves the same at any position. Deferred
  writes that fire during the unit-end check belong to the unit's last
  mutation, and accepted outcomes show rows as they are after the check. When
  the push function is called inside a SQL transaction that already has a
  pending deferred trigger event, the call fails with SQLSTATE 25000 before
  doing anything and does not fire that event. The harness provisions tables
  with deferrable foreign keys, deferrable unique constraints and deferred
  constraint triggers, pushes batches over HTTP, and calls the push entry point
  in SQL for the pending-event case.

  Background:
    Given a registered table "lists" with columns:
      | column   | type   | key | writable | lifecycle |
      | id       | string | yes | no       |           |
      | owner_id | string | no  | yes      |           |
      | name     | string | no  | yes      |           |
      | code     | string | no  | yes      |           |
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
      ALTER TABLE public.items ADD CONSTRAINT items_list_fk FOREIGN KEY (list_id) REFERENCES public.lists (id) DEFERRABLE INITIALLY DEFERRED;
      ALTER TABLE public.lists ADD CONSTRAINT lists_code_key UNIQUE (code) DEFERRABLE INITIALLY IMMEDIATE;
      """
    And client "W" of user "alice" has connected
    And the server holds these "lists" rows, created by client "W":
      | id  | owner_id | name    | code | version |
      | l-1 | alice    | grocery | A    | L1      |
      | l-2 | alice    | garden  | B    | L2      |

  Rule: before the first unit, a pending deferrable trigger event in the calling transaction fails the whole call with SQLSTATE 25000

    @cap:provision @cap:sourceSql @cap:inspect
    Scenario: a call made while the caller has a pending deferred event fails with 25000 and claims nothing
      When the harness, in one source database transaction, inserts item "i-9" with list_id "l-404" into "items" and then calls the push entry point for client "W" with batch "15b00001-0000-4000-8000-000000000001" inserting row "i-10" of table "items"
      Then the push entry point fails with SQLSTATE "25000"
      And server inspection shows no batch ledger row for batch "15b00001-0000-4000-8000-000000000001"
      And server inspection shows no mutation ledger row first sent in batch "15b00001-0000-4000-8000-000000000001"

  Rule: the pending caller event is not fired by the call

    @negative @cap:provision @cap:sourceSql @cap:inspect
    Scenario: a deferred constraint trigger of the caller does not run inside the call
      Given table "items" has a deferred constraint trigger that records each firing in table "trigger_log"
      When the harness, in one source database transaction, inserts item "i-9" with list_id "l-1" into "items" and then calls the push entry point for client "W" with batch "15b00002-0000-4000-8000-000000000002" inserting row "i-10" of table "items"
      Then the push entry point fails with SQLSTATE "25000"
      And no firing was ever recorded in table "trigger_log"

  Rule: each unit starts with every deferrable constraint deferred, whatever its position

    @cap:provision
    Scenario: an atomic group may insert a child before its parent
      When client "W" pushes atomic batch "15b00003-0000-4000-8000-000000000003" with:
        | mutation_id                          | operation | table | pk  | base_version | owner_id | list_id | label | name  | code |
        | 15a00001-0000-4000-8000-000000000001 | insert    | items | i-1 |              | alice    | l-3     | seeds |       |      |
        | 15a00002-0000-4000-8000-000000000002 | insert    | lists | l-3 |              | alice    |         |       | shed  | C    |
      Then the response status is 200
      And the accepted list holds mutations "15a00001-0000-4000-8000-000000000001, 15a00002-0000-4000-8000-000000000002" in this order

    @cap:provision
    Scenario: an atomic group may swap values under a DEFERRABLE INITIALLY IMMEDIATE unique constraint
      When client "W" pushes atomic batch "15b00004-0000-4000-8000-000000000004" with:
        | mutation_id                          | operation | table | pk  | base_version | code |
        | 15a00003-0000-4000-8000-000000000003 | update    | lists | l-1 | L1           | B    |
        | 15a00004-0000-4000-8000-000000000004 | update    | lists | l-2 | L2           | A    |
      Then the response status is 200
      And the accepted list holds mutations "15a00003-0000-4000-8000-000000000003, 15a00004-0000-4000-8000-000000000004" in this order

    @negative @cap:provision
    Scenario Outline: a unit-end violation at position <position> of a non-atomic batch gives the same outcome
      When client "W" pushes a batch of three mutations with the orphan item insert at position <position> and valid inserts of lists "l-5" and "l-6" with codes "E" and "F" at the other positions, where the orphan item insert is:
        | mutation_id                          | operation | table | pk  | owner_id | list_id | label |
        | 15a00005-0000-4000-8000-000000000005 | insert    | items | i-5 | alice    | l-404   | lost  |
      Then the response status is 200
      And the outcome of mutation "15a00005-0000-4000-8000-000000000005" is in list "rejected" with status "rejected_terminal" and code "validation_failed"
      And both list inserts are applied

      Examples:
        | position |
        | 1        |
        | 2        |
        | 3        |

  Rule: each unit checks every deferrable constraint before it ends, never at transaction commit

    @negative @cap:provision
    Scenario: a non-atomic child insert with a missing parent fails alone and the request still answers 200
      When client "W" pushes batch "15b00006-0000-4000-8000-000000000006" with:
        | mutation_id                          | operation | table | pk  | base_version | owner_id | list_id | label | name  | code |
        | 15a00006-0000-4000-8000-000000000006 | insert    | items | i-6 |              | alice    | l-7     | bulbs |       |      |
        | 15a00007-0000-4000-8000-000000000007 | insert    | lists | l-7 |              | alice    |         |       | porch | G    |
      And capture has materialized every committed source transaction
      Then the response status is 200
      And the push outcomes are:
        | mutation_id                          | list     | status            | code              |
        | 15a00006-0000-4000-8000-000000000006 | rejected | rejected_terminal | validation_failed |
        | 15a00007-0000-4000-8000-000000000007 | accepted | applied           |                   |
      And the server holds no row "i-6" of table "items"
      And the server holds row "l-7" of table "lists" with name "porch"

  Rule: a failed unit-end check rolls back only its unit and yields rejected_terminal validation_failed, on the last mutation of an atomic group

    @cap:provision
    Scenario: a failing atomic group puts validation_failed on its last mutation
      When client "W" pushes atomic batch "15b00007-0000-4000-8000-000000000007" with:
        | mutation_id                          | operation | table | pk  | base_version | owner_id | list_id | label | name  |
        | 15a00008-0000-4000-8000-000000000008 | insert    | items | i-8 |              | alice    | l-404   | lost  |       |
        | 15a00009-0000-4000-8000-000000000009 | update    | lists | l-1 | L1           |          |         |       | food  |
      Then the response status is 200
      And the push outcomes are:
        | mutation_id                          | list     | status            | code                  |
        | 15a00008-0000-4000-8000-000000000008 | rejected | rejected_terminal | atomic_batch_rejected |
        | 15a00009-0000-4000-8000-000000000009 | rejected | rejected_terminal | validation_failed     |
      And the server holds no row "i-8" of table "items"
      And the server holds row "l-1" of table "lists" with name "grocery" at version "L1"

    @cap:provision
    Scenario: a unit-end violation of a non-deferrable unique constraint fails on the first update of the swap
      Given the harness commits on the source database:
        """
        ALTER TABLE public.lists DROP CONSTRAINT lists_code_key;
        ALTER TABLE public.lists ADD CONSTRAINT lists_code_key UNIQUE (code);
        """
      When client "W" pushes atomic batch "15b00008-0000-4000-8000-000000000008" with:
        | mutation_id                          | operation | table | pk  | base_version | code |
        | 15a0000a-0000-4000-8000-00000000000a | update    | lists | l-1 | L1           | B    |
        | 15a0000b-0000-4000-8000-00000000000b | update    | lists | l-2 | L2           | A    |
      Then the response status is 200
      And the push outcomes are:
        | mutation_id                          | list     | status            | code                  |
        | 15a0000a-0000-4000-8000-00000000000a | rejected | rejected_terminal | validation_failed     |
        | 15a0000b-0000-4000-8000-00000000000b | rejected | rejected_terminal | atomic_batch_rejected |

    @negative @cap:provision @cap:sourceSql
    Scenario Outline: a deferred trigger raising class <class> SQLSTATE <sqlstate> at unit end fails only its unit
      Given table "lists" has a deferred constraint trigger that raises SQLSTATE "<sqlstate>" when a row's name becomes "BOOM"
      When client "W" pushes batch "15b00009-0000-4000-8000-000000000009" with:
        | mutation_id                          | operation | table | pk  | base_version | owner_id | name  | code |
        | 15a0000c-0000-4000-8000-00000000000c | insert    | lists | l-8 |              | alice    | attic | H    |
        | 15a0000d-0000-4000-8000-00000000000d | update    | lists | l-1 | L1           |          | BOOM  |      |
      Then the response status is 200
      And the push outcomes are:
        | mutation_id                          | list     | status            | code              |
        | 15a0000c-0000-4000-8000-00000000000c | accepted | applied           |                   |
        | 15a0000d-0000-4000-8000-00000000000d | rejected | rejected_terminal | validation_failed |
      And the server holds row "l-1" of table "lists" with name "grocery" at version "L1"

      Examples:
        | class | sqlstate |
        | 23    | 23514    |
        | 22    | 22023    |

    @negative @cap:provision @cap:sourceSql
    Scenario: a deferred trigger raising a serialization failure at unit end fails the whole request
      Given table "lists" has a deferred constraint trigger that raises SQLSTATE "40001" when a row's name becomes "BOOM"
      When client "W" pushes batch "15b0000c-0000-4000-8000-00000000000c" with:
        | mutation_id                          | operation | table | pk  | base_version | owner_id | name  | code |
        | 15a00011-0000-4000-8000-000000000011 | insert    | lists | l-8 |              | alice    | attic | H    |
        | 15a00012-0000-4000-8000-000000000012 | update    | lists | l-1 | L1           |          | BOOM  |      |
      Then the response status is 503 with error code "temporary_unavailable"
      And the server holds no row "l-8" of table "lists"
      And the server holds row "l-1" of table "lists" with name "grocery" at version "L1"

  Rule: the last mutation of a unit owns each synced write that the unit-end check causes

    @cap:provision @cap:sourceSql @cap:inspect
    Scenario: a deferred trigger's write to a synced row is fenced under the last mutation of the unit
      Given table "items" has a deferred constraint trigger that, when an item is inserted, sets the name of its list to "touched"
      When client "W" pushes atomic batch "15b0000a-0000-4000-8000-00000000000a" with:
        | mutation_id                          | operation | table | pk   | base_version | owner_id | list_id | label  |
        | 15a0000e-0000-4000-8000-00000000000e | insert    | items | i-11 |              | alice    | l-2     | rake   |
        | 15a0000f-0000-4000-8000-00000000000f | insert    | items | i-12 |              | alice    | l-2     | hoe    |
      Then the response status is 200
      And server inspection shows the write fence of row "l-2" of table "lists" carrying mutation "15a0000f-0000-4000-8000-00000000000f"

  Rule: each accepted outcome reports its row state after the unit-end check

    @cap:provision @cap:sourceSql
    Scenario: a deferred trigger that rewrites the pushed row is visible in the accepted outcome
      Given table "lists" has a deferred constraint trigger that upper-cases the name of each inserted or updated row
      When client "W" pushes batch "15b0000b-0000-4000-8000-00000000000b" with:
        | mutation_id                          | operation | table | pk  | base_version | name   |
        | 15a00010-0000-4000-8000-000000000010 | update    | lists | l-1 | L1           | pantry |
      Then the accepted outcome of mutation "15a00010-0000-4000-8000-000000000010" has a server_row with name "PANTRY"
      And the server holds row "l-1" of table "lists" with name "PANTRY" at the version returned for mutation "15a00010-0000-4000-8000-000000000010"
