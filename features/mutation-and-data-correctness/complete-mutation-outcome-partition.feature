@SYNC-MUT-013 @server
Feature: Complete Mutation Outcome Partition
  A 200 push response is the server's complete account of a first execution:
  every mutation of the request appears exactly once, accepted outcomes
  (status applied) in "accepted" and conflicts or terminal rejections in
  "rejected", each array in the order the mutations had in the request. Every
  outcome has exactly the members its status and code call for, so a client
  can reconcile by mutation_id alone and never has to guess whether something
  it sent was lost or may be retried. The harness sends batches that reach
  every cell of the outcome table and checks the partition, the order and the
  member set of each outcome against the push-response schema and the ADR 002
  field table.

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
    And the server holds these "notes" rows, created by client "W":
      | id  | owner_id | body   | version |
      | n-1 | alice    | milk   | V1      |
      | n-2 | alice    | eggs   | V2      |
      | n-3 | alice    | bread  | V3      |
      | n-4 | alice    | flour  | V4      |
    And the server holds these "tasks" rows, created by client "W":
      | id  | owner_id | title    | version |
      | t-1 | alice    | file tax | T1      |
      | t-2 | alice    | call vet | T2      |
    And client "W" has pushed a batch with:
      | mutation_id                          | operation | table | pk  | base_version |
      | 13a00000-0000-4000-8000-000000000001 | delete    | notes | n-4 | V4           |
      | 13a00000-0000-4000-8000-000000000002 | delete    | tasks | t-1 | T1           |

  Rule: every requested mutation appears exactly once, either in accepted or in rejected

    @cap:provision
    Scenario: a mixed batch of seven mutations is partitioned without loss or duplication
      When client "W" pushes batch "13b00001-0000-4000-8000-000000000001" with:
        | mutation_id                          | operation | table   | pk  | base_version | owner_id | body   | updated_at                  |
        | 13a00001-0000-4000-8000-000000000001 | insert    | notes   | n-5 |              | alice    | plums  |                             |
        | 13a00002-0000-4000-8000-000000000002 | update    | notes   | n-1 | "sv-stale"   |          | soy    |                             |
        | 13a00003-0000-4000-8000-000000000003 | delete    | notes   | n-2 | V2           |          |        |                             |
        | 13a00004-0000-4000-8000-000000000004 | insert    | notes   | n-3 |              | alice    | rye    |                             |
        | 13a00005-0000-4000-8000-000000000005 | update    | notes   | n-3 | V3           |          |        | 2026-09-01T08:00:00.000000Z |
        | 13a00006-0000-4000-8000-000000000006 | update    | notes   | n-9 | "sv-any"     |          | kale   |                             |
        | 13a00008-0000-4000-8000-000000000008 | update    | notes   | n-1 | V1           |          | kefir  |                             |
      Then the response status is 200
      And the response body matches schema "push-response"
      And the response batch_id is "13b00001-0000-4000-8000-000000000001"
      And the mutation_ids of accepted and rejected together are exactly the request's mutation_ids, each once
      And the accepted list holds mutations "13a00001-0000-4000-8000-000000000001, 13a00003-0000-4000-8000-000000000003, 13a00008-0000-4000-8000-000000000008" in this order
      And the rejected list holds mutations "13a00002-0000-4000-8000-000000000002, 13a00004-0000-4000-8000-000000000004, 13a00005-0000-4000-8000-000000000005, 13a00006-0000-4000-8000-000000000006" in this order
      And the push outcomes are:
        | mutation_id                          | list     | status            | code               |
        | 13a00001-0000-4000-8000-000000000001 | accepted | applied           |                    |
        | 13a00002-0000-4000-8000-000000000002 | rejected | conflict          | version_conflict   |
        | 13a00003-0000-4000-8000-000000000003 | accepted | applied           |                    |
        | 13a00004-0000-4000-8000-000000000004 | rejected | conflict          | row_already_exists |
        | 13a00005-0000-4000-8000-000000000005 | rejected | rejected_terminal | validation_failed  |
        | 13a00006-0000-4000-8000-000000000006 | rejected | conflict          | row_not_found      |
        | 13a00008-0000-4000-8000-000000000008 | accepted | applied           |                    |

    @property @cap:provision
    Scenario: for many generated batches the partition is complete and ordered
      When client "W" pushes 100 generated batches, each of 1 to 40 mutations drawn from insert, update and delete on the keys n-1 to n-8 of table "notes", with base_version drawn from the current version, a stale version and absence as the operation allows
      Then every response has status 200
      And in every response the mutation_ids of accepted and rejected together are exactly the request's mutation_ids, each once
      And in every response each of accepted and rejected is a subsequence of the request order

  Rule: each outcome uses only the statuses, codes and members defined by ADR 002

    @cap:provision
    Scenario Outline: a <case> outcome carries exactly the members its cell requires
      When client "W" pushes a batch with one <operation> of row "<pk>" of table "<table>" with base_version <base> and columns <columns>
      Then the response status is 200
      And the outcome of that mutation is in list "<list>" with status "<status>" and code "<code>"
      And that outcome has members mutation_id, table, pk and outcome_schema equal to the request's values and schema
      And that outcome has server_version <version>, server_row <row> and row_checksum <row>
      And that outcome has message <message> and no member "retryable"

      Examples:
        | case                             | operation | table | pk  | base       | columns                              | list     | status            | code               | version              | row     | message |
        | applied insert                   | insert    | notes | n-6 | absent     | {"owner_id":"alice","body":"beans"}  | accepted | applied           |                    | present and new      | present | absent  |
        | applied update                   | update    | notes | n-1 | V1         | {"body":"oat"}                       | accepted | applied           |                    | present and new      | present | absent  |
        | applied soft delete              | delete    | notes | n-3 | V3         | absent                               | accepted | applied           |                    | present and new      | present | absent  |
        | applied hard delete (fence only) | delete    | tasks | t-2 | T2         | absent                               | accepted | applied           |                    | present and new      | absent  | absent  |
        | version conflict on a live row   | update    | notes | n-1 | "sv-stale" | {"body":"oat"}                       | rejected | conflict          | version_conflict   | present, equal to V1 | present | present |
        | insert over a live row           | insert    | notes | n-1 | absent     | {"owner_id":"alice","body":"oat"}    | rejected | conflict          | row_already_exists | present, equal to V1 | present | present |
        | update of a tombstone            | update    | notes | n-4 | V4         | {"body":"oat"}                       | rejected | conflict          | row_deleted        | present and current  | present | present |
        | update of a fence-only delete    | update    | tasks | t-1 | T1         | {"title":"oat"}                      | rejected | conflict          | row_deleted        | present and current  | absent  | present |
        | update of an absent row          | update    | notes | n-9 | "sv-any"   | {"body":"oat"}                       | rejected | conflict          | row_not_found      | absent               | absent  | present |
        | price beyond the declared scale  | insert    | notes | n-7 | absent     | {"owner_id":"alice","price":"1.234"} | rejected | rejected_terminal | validation_failed  | absent               | absent  | present |
        | write of the update-time field   | update    | notes | n-2 | V2         | {"updated_at":"2026-09-01T08:00:00.000000Z"} | rejected | rejected_terminal | validation_failed | absent | absent | present |

    @cap:provision
    Scenario: every row_checksum verifies under the outcome_schema and server_version of its outcome
      When client "W" pushes a batch with:
        | mutation_id                          | operation | table | pk  | base_version | owner_id | body  | price |
        | 13a00011-0000-4000-8000-000000000011 | insert    | notes | n-8 |              | alice    | salt  | 1.5   |
        | 13a00012-0000-4000-8000-000000000012 | update    | notes | n-1 | "sv-stale"   |          | sugar |       |
      Then every outcome that carries server_row also carries row_checksum, and no other outcome carries either
      And every row_checksum equals the ADR 005 row digest of its server_row under its outcome_schema and server_version

  Rule: no outcome is omitted, duplicated, cross-listed or marked retryable

    @negative @cap:provision
    Scenario: a batch that repeats work on one row still lists each mutation once
      When client "W" pushes a batch with:
        | mutation_id                          | operation | table | pk  | base_version | body   |
        | 13a00020-0000-4000-8000-000000000020 | update    | notes | n-1 | V1           | one    |
        | 13a00021-0000-4000-8000-000000000021 | update    | notes | n-1 | V1           | two    |
        | 13a00022-0000-4000-8000-000000000022 | update    | notes | n-1 | V1           | three  |
      Then the response status is 200
      And the mutation_ids of accepted and rejected together are exactly the request's mutation_ids, each once
      And the accepted list holds mutations "13a00020-0000-4000-8000-000000000020" in this order
      And the rejected list holds mutations "13a00021-0000-4000-8000-000000000021, 13a00022-0000-4000-8000-000000000022" in this order

    @negative @property @cap:provision
    Scenario: for many generated batches no retryable per-mutation outcome appears
      When client "W" pushes 100 generated batches, each of 1 to 40 mutations drawn from insert, update and delete on the keys n-1 to n-8 of table "notes", with base_version drawn from the current version, a stale version and absence as the operation allows
      Then no outcome in any response has status "rejected_retryable", "server_retryable" or "unknown_scope_effect"
      And no outcome in any response has code "unknown_scope_effect"
      And no outcome in any response carries "retryable" unless its code is "schema_incompatible", where it is false
      And no response answers a row conflict with status 409
