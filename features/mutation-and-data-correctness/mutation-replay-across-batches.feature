@SYNC-MUT-010 @server
Feature: Mutation Replay Across Batches
  A mutation identity belongs to one logical local action for the life of the
  client, whichever batch carries it. After a reconnect a client may move an
  unchanged, already completed mutation into a new batch; the server must then
  hand back the outcome it stored the first time instead of running the
  mutation again, and must refuse the whole request with 409
  idempotency_conflict when the same mutation_id arrives with different
  content. The harness completes a mutation in one batch, repeats it in a new
  batch next to fresh mutations, and compares the outcome members with the
  stored ones, the row state, and the fate of the sibling mutations.

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

  Rule: a mutation identity with an equal mutation fingerprint in a different new batch contributes its exact stored outcome without re-execution

    @cap:provision
    Scenario: a completed insert carried again next to a new mutation keeps its stored outcome
      Given client "W" has pushed batch "10b00001-0000-4000-8000-000000000001" with:
        | mutation_id                          | operation | table | pk  | base_version | owner_id | body |
        | 10a00001-0000-4000-8000-000000000001 | insert    | notes | n-2 |              | alice    | eggs |
      And the accepted outcome of mutation "10a00001-0000-4000-8000-000000000001" is remembered as "O1"
      When client "W" pushes batch "10b00002-0000-4000-8000-000000000002" with:
        | mutation_id                          | operation | table | pk  | base_version | owner_id | body |
        | 10a00001-0000-4000-8000-000000000001 | insert    | notes | n-2 |              | alice    | eggs |
        | 10a00002-0000-4000-8000-000000000002 | insert    | notes | n-4 |              | alice    | figs |
      Then the response status is 200
      And the accepted list holds mutations "10a00001-0000-4000-8000-000000000001, 10a00002-0000-4000-8000-000000000002" in this order
      And the outcome of mutation "10a00001-0000-4000-8000-000000000001" is member for member equal to "O1"
      And the server holds row "n-2" of table "notes" with body "eggs" at the server_version of "O1"
      And the server holds row "n-4" of table "notes" with body "figs"

    @cap:provision
    Scenario: a stored conflict stays that conflict with its stored row in a new batch
      Given client "W" has pushed batch "10b00003-0000-4000-8000-000000000003" with:
        | mutation_id                          | operation | table | pk  | base_version | body |
        | 10a00003-0000-4000-8000-000000000003 | update    | notes | n-1 | "sv-stale"   | soy  |
      And the rejected outcome of mutation "10a00003-0000-4000-8000-000000000003" is remembered as "O3"
      And client "W" has pushed a batch with:
        | mutation_id                          | operation | table | pk  | base_version | body  |
        | 10a00004-0000-4000-8000-000000000004 | update    | notes | n-1 | V1           | rice  |
      When client "W" pushes batch "10b00004-0000-4000-8000-000000000004" with:
        | mutation_id                          | operation | table | pk  | base_version | body |
        | 10a00003-0000-4000-8000-000000000003 | update    | notes | n-1 | "sv-stale"   | soy  |
      Then the response status is 200
      And the outcome of mutation "10a00003-0000-4000-8000-000000000003" is member for member equal to "O3"
      And the server holds row "n-1" of table "notes" with body "rice"

    @cap:provision @cap:schema
    Scenario: a completed mutation carried in a batch under a newer request schema keeps its original outcome_schema
      Given client "W" has pushed batch "10b00005-0000-4000-8000-000000000005" with:
        | mutation_id                          | operation | table | pk  | base_version | owner_id | body  |
        | 10a00005-0000-4000-8000-000000000005 | insert    | notes | n-5 |              | alice    | jam   |
      And the accepted outcome of mutation "10a00005-0000-4000-8000-000000000005" is remembered as "O5"
      And the operator publishes a new schema version that adds nullable writable column "tag" of type string to table "notes"
      And client "W" has connected again and received the new schema
      When client "W" pushes batch "10b00006-0000-4000-8000-000000000006" under the new schema with:
        | mutation_id                          | operation | table | pk  | base_version | owner_id | body  |
        | 10a00005-0000-4000-8000-000000000005 | insert    | notes | n-5 |              | alice    | jam   |
        | 10a00006-0000-4000-8000-000000000006 | insert    | notes | n-6 |              | alice    | honey |
      Then the response status is 200
      And the outcome of mutation "10a00005-0000-4000-8000-000000000005" is member for member equal to "O5"
      And the outcome of mutation "10a00006-0000-4000-8000-000000000006" has outcome_schema equal to the new schema

  Rule: the same mutation identity with a different mutation fingerprint fails the whole request with 409 idempotency_conflict

    @negative @cap:provision @cap:sourceSql
    Scenario Outline: a completed mutation repeated with <change> fails the whole new batch
      Given client "W" has pushed batch "10b00007-0000-4000-8000-000000000007" with:
        | mutation_id                          | operation | table | pk  | base_version | body  |
        | 10a00007-0000-4000-8000-000000000007 | update    | notes | n-1 | V1           | kefir |
      When client "W" pushes batch "10b00008-0000-4000-8000-000000000008" with mutation "10a00007-0000-4000-8000-000000000007" changed by <change>, followed by:
        | mutation_id                          | operation | table | pk  | base_version | owner_id | body  |
        | 10a00008-0000-4000-8000-000000000008 | insert    | notes | n-8 |              | alice    | cumin |
      Then the response status is 409 with error code "idempotency_conflict"
      And the error body has code "idempotency_conflict", a nonempty message, "retryable": false and no member "accepted" or "rejected"
      And the server holds no row "n-8" of table "notes"
      And no durable state changed on the server

      Examples:
        | change                                                   |
        | body "yogurt" instead of "kefir"                         |
        | client_version "2026-09-01T08:00:00.000001Z"             |
        | the added column "price" with value null                 |
        | base_version "sv-other" instead of the remembered "V1"   |
        | operation "delete" without columns                       |

  Rule: a repeated mutation identity is neither reclassified nor applied again

    @negative @cap:provision
    Scenario: an accepted delete carried in a new batch is not executed a second time
      Given client "W" has pushed batch "10b00009-0000-4000-8000-000000000009" with:
        | mutation_id                          | operation | table | pk  | base_version |
        | 10a00009-0000-4000-8000-000000000009 | delete    | notes | n-3 | V3           |
      And the accepted outcome of mutation "10a00009-0000-4000-8000-000000000009" is remembered as "O9"
      When client "W" pushes batch "10b0000a-0000-4000-8000-00000000000a" with:
        | mutation_id                          | operation | table | pk  | base_version |
        | 10a00009-0000-4000-8000-000000000009 | delete    | notes | n-3 | V3           |
      Then the response status is 200
      And the outcome of mutation "10a00009-0000-4000-8000-000000000009" is member for member equal to "O9"
      And no outcome in the response has code "row_deleted"

    @negative @cap:provision @cap:sourceSql
    Scenario: an atomic request may not carry a mutation identity completed in another batch
      Given client "W" has pushed batch "10b0000b-0000-4000-8000-00000000000b" with:
        | mutation_id                          | operation | table | pk   | base_version | owner_id | body |
        | 10a0000b-0000-4000-8000-00000000000b | insert    | notes | n-11 |              | alice    | oats |
      When client "W" pushes atomic batch "10b0000c-0000-4000-8000-00000000000c" with:
        | mutation_id                          | operation | table | pk   | base_version | owner_id | body |
        | 10a0000b-0000-4000-8000-00000000000b | insert    | notes | n-11 |              | alice    | oats |
        | 10a0000c-0000-4000-8000-00000000000c | insert    | notes | n-12 |              | alice    | rye  |
      Then the response status is 400 with error code "invalid_request"
      And the server holds no row "n-12" of table "notes"
      And no durable state changed on the server
