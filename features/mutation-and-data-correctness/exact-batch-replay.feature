@SYNC-MUT-009 @server
Feature: Exact Batch Replay
  A client that loses a push response must be able to send the same sealed
  batch again and get back exactly what the first execution produced, without
  the server doing the work twice. The batch identity is scoped to the
  authenticated user and the client, and the server compares the canonical
  SHA-256 fingerprint of the request with the one it stored: an equal
  fingerprint returns the stored status and the stored canonical bytes (same
  server_time, order, rows, versions, codes and messages); a different one is
  refused with 409 idempotency_conflict. The harness resends batches byte for
  byte, in reordered or re-spaced JSON, and with single changes, and compares
  the response bytes, the row state and side-effect counters.

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

  Rule: a completed batch sent again with the same scoped identity and fingerprint returns the original status and exact canonical response without executing mutation work

    @cap:provision
    Scenario: a lost response is recovered byte for byte
      When client "W" pushes batch "09b00001-0000-4000-8000-000000000001" with:
        | mutation_id                          | operation | table | pk  | base_version | owner_id | body       |
        | 09a00001-0000-4000-8000-000000000001 | insert    | notes | n-2 |              | alice    | eggs       |
        | 09a00002-0000-4000-8000-000000000002 | update    | notes | n-1 | V1           |          | oat milk   |
        | 09a00003-0000-4000-8000-000000000003 | update    | notes | n-3 | "sv-stale"   |          | rye bread  |
      Then the response status is 200
      And the server_version of mutation "09a00002-0000-4000-8000-000000000002" is remembered as "V2"
      When client "W" resends batch "09b00001-0000-4000-8000-000000000001" unchanged
      Then the response status is 200
      And the response body is byte-identical to the first response to batch "09b00001-0000-4000-8000-000000000001"
      And the server holds row "n-1" of table "notes" with body "oat milk" at version "V2"
      And the server holds row "n-2" of table "notes" with body "eggs"
      And the server holds row "n-3" of table "notes" with body "bread" at version "V3"

    @cap:provision
    Scenario: the replay lookup ignores JSON member order and whitespace
      Given client "W" has pushed batch "09b00002-0000-4000-8000-000000000002" with:
        | mutation_id                          | operation | table | pk  | base_version | owner_id | body  | price |
        | 09a00004-0000-4000-8000-000000000004 | insert    | notes | n-4 |              | alice    | flour | 2.5   |
      When client "W" resends batch "09b00002-0000-4000-8000-000000000002" with every object's members in reverse order and two spaces after each separator
      Then the response status is 200
      And the response body is byte-identical to the first response to batch "09b00002-0000-4000-8000-000000000002"

    @cap:provision
    Scenario: a replay returns the stored row and version even after the row moved on
      Given client "W" has pushed batch "09b00003-0000-4000-8000-000000000003" with:
        | mutation_id                          | operation | table | pk  | base_version | body     |
        | 09a00005-0000-4000-8000-000000000005 | update    | notes | n-1 | V1           | skimmed  |
      And the server_version of mutation "09a00005-0000-4000-8000-000000000005" is remembered as "V2"
      And client "W" has pushed a batch with:
        | mutation_id                          | operation | table | pk  | base_version | body     |
        | 09a00006-0000-4000-8000-000000000006 | update    | notes | n-1 | V2           | whole    |
      When client "W" resends batch "09b00003-0000-4000-8000-000000000003" unchanged
      Then the response body is byte-identical to the first response to batch "09b00003-0000-4000-8000-000000000003"
      And the accepted outcome of mutation "09a00005-0000-4000-8000-000000000005" has server_version "V2" and server_row body "skimmed"
      And the server holds row "n-1" of table "notes" with body "whole"

    @cap:provision
    Scenario: a stored conflict replays as that conflict even when the row now matches its base
      Given client "W" has pushed batch "09b00004-0000-4000-8000-000000000004" with:
        | mutation_id                          | operation | table | pk  | base_version | body   |
        | 09a00007-0000-4000-8000-000000000007 | update    | notes | n-3 | "sv-stale"   | pita   |
      When client "W" resends batch "09b00004-0000-4000-8000-000000000004" unchanged
      Then the response body is byte-identical to the first response to batch "09b00004-0000-4000-8000-000000000004"
      And the rejected outcome of mutation "09a00007-0000-4000-8000-000000000007" has status "conflict", code "version_conflict" and server_version "V3"

    @cap:provision @cap:schema
    Scenario: a replay after a schema change is served from the ledger, not refused by the schema gate
      Given client "W" has pushed batch "09b00005-0000-4000-8000-000000000005" with:
        | mutation_id                          | operation | table | pk  | base_version | owner_id | body |
        | 09a00008-0000-4000-8000-000000000008 | insert    | notes | n-5 |              | alice    | jam  |
      And the operator publishes a new schema version that adds nullable writable column "tag" of type string to table "notes"
      When client "W" resends batch "09b00005-0000-4000-8000-000000000005" unchanged
      Then the response status is 200
      And the response body is byte-identical to the first response to batch "09b00005-0000-4000-8000-000000000005"

    @cap:provision @cap:clients
    Scenario: a replay with the generation that has since expired is served from the ledger
      Given client "W" has pushed batch "09b00006-0000-4000-8000-000000000006" with:
        | mutation_id                          | operation | table | pk  | base_version | owner_id | body  |
        | 09a00009-0000-4000-8000-000000000009 | insert    | notes | n-6 |              | alice    | honey |
      And the operator expires the client generation of client "W"
      And client "W" has connected again and received a new client_generation
      When client "W" resends batch "09b00006-0000-4000-8000-000000000006" unchanged
      Then the response status is 200
      And the response body is byte-identical to the first response to batch "09b00006-0000-4000-8000-000000000006"

    @cap:provision
    Scenario: concurrent identical first requests execute once
      When client "W" sends batch "09b00007-0000-4000-8000-000000000007" 5 times concurrently with:
        | mutation_id                          | operation | table | pk  | base_version | body    |
        | 09a00010-0000-4000-8000-00000000000a | update    | notes | n-1 | V1           | cocoa   |
      Then every response is either status 200 with one identical body or status 503 with error code "temporary_unavailable" and a Retry-After header
      And no response has status 409
      And at least one response has status 200
      And the server holds row "n-1" of table "notes" with body "cocoa" at the server_version given in the 200 responses

    @negative @cap:provision @cap:sourceSql
    Scenario: a replay fires no source trigger and allocates no version
      Given table "notes" has a source trigger that counts every row it sees inserted or updated
      And client "W" has pushed batch "09b00008-0000-4000-8000-000000000008" with:
        | mutation_id                          | operation | table | pk  | base_version | owner_id | body   |
        | 09a00011-0000-4000-8000-00000000000b | insert    | notes | n-7 |              | alice    | butter |
        | 09a00012-0000-4000-8000-00000000000c | update    | notes | n-1 | V1           |          | kefir  |
      And the source trigger count is remembered
      When client "W" resends batch "09b00008-0000-4000-8000-000000000008" unchanged
      And client "W" resends batch "09b00008-0000-4000-8000-000000000008" unchanged
      Then the source trigger count is unchanged
      And the server holds row "n-1" of table "notes" with body "kefir" at the version returned for mutation "09a00012-0000-4000-8000-00000000000c"

    @negative @cap:provision
    Scenario: a replay does not invalidate an open rebuild continuation
      Given client "W" has pushed batch "09b00009-0000-4000-8000-000000000009" with:
        | mutation_id                          | operation | table | pk  | base_version | owner_id | body   |
        | 09a00013-0000-4000-8000-00000000000d | insert    | notes | n-8 |              | alice    | cream  |
      And client "W" has received rebuild page 1 of scope "user:alice" with limit 1 and has_more true
      When client "W" resends batch "09b00009-0000-4000-8000-000000000009" unchanged
      And client "W" requests the next rebuild page of scope "user:alice"
      Then the response status is 200

  Rule: the same batch identity with a different fingerprint returns 409 idempotency_conflict without mutation work

    @negative @cap:provision
    Scenario Outline: a completed batch re-sent with <change> is refused
      Given client "W" has pushed batch "09b0000a-0000-4000-8000-00000000000a" with:
        | mutation_id                          | operation | table | pk  | base_version | owner_id | body   |
        | 09a00014-0000-4000-8000-00000000000e | insert    | notes | n-9 |              | alice    | salt   |
        | 09a00015-0000-4000-8000-00000000000f | update    | notes | n-1 | V1           |          | ghee   |
      When client "W" resends batch "09b0000a-0000-4000-8000-00000000000a" with <change>
      Then the response status is 409 with error code "idempotency_conflict"
      And the error body has code "idempotency_conflict", a nonempty message, "retryable": false and no member "accepted" or "rejected"
      And no durable state changed on the server

      Examples:
        | change                                                                   |
        | body "pepper" instead of "salt" in the first mutation                    |
        | the two mutations in reverse order                                       |
        | the added envelope member "atomic": true                                 |
        | a request schema hash of 64 "a" characters                               |
        | client_generation one higher than the stored one                         |
        | client_version "2026-09-01T08:00:00.000001Z" in the second mutation      |
        | "price": null added to the columns of the first mutation                 |
        | base_version "sv-stale" in the second mutation                           |
