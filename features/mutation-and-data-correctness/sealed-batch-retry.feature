@SYNC-MUT-021 @client
Feature: Sealed Batch Retry
  Before a client sends a batch for the first time it seals it: the batch_id,
  the request schema, the mutations, their order and every byte of their
  content are fixed and stored. From then on every retry, whether after a
  lost response, a 429 or a 503, and whether before or after a restart, sends
  that same sealed request, so the server can recognise it and replay the
  stored result. Editing a sealed batch under the same batch_id, or starting
  a fresh execution for an operational failure, would either be refused with
  idempotency_conflict or apply the user's intent twice. The harness records
  every push request in the proxy, injects the failures, kills the client
  between sealing and sending, and compares the bytes.

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
    And client "A" of user "alice" has connected and rebuilt every assigned scope
    And client "A" executes SQL:
      """
      INSERT INTO notes (id, owner_id, body) VALUES ('n-1', 'alice', 'milk')
      INSERT INTO notes (id, owner_id, body, price) VALUES ('n-2', 'alice', 'bread', NULL)
      INSERT INTO notes (id, owner_id, body) VALUES ('n-3', 'alice', 'eggs')
      """

  Rule: a batch is sealed before its first transmission

    @cap:provision
    Scenario: the stored sealed batch equals the bytes that reach the proxy
      Given the proxy holds the next push request of client "A" before forwarding it
      When client "A" syncs in the background
      Then client "A" shows one sealed batch whose stored request bytes equal the bytes the proxy holds
      And client "A" shows the three inserts with status "sealed", that batch ID and ordinals 0, 1 and 2

    @cap:provision @cap:crash
    Scenario Outline: a crash at <point> sends the sealed bytes after restart
      Given client "A" will crash at point "<point>"
      When client "A" syncs
      And client "A" is restarted
      And client "A" syncs
      Then the first push request the proxy recorded from client "A" after the restart is byte-identical to the sealed batch client "A" stored before the crash
      And the server accepted each of the three inserts exactly once

      Examples:
        | point            |
        | after_seal_commit |
        | before_push_send  |

    @cap:provision
    Scenario: writes made after sealing go into a later batch
      Given the proxy holds the next push request of client "A" before forwarding it
      And client "A" syncs in the background
      When client "A" executes SQL "INSERT INTO notes (id, owner_id, body) VALUES ('n-4', 'alice', 'figs')"
      And client "A" executes SQL "UPDATE notes SET body = 'oat' WHERE id = 'n-1'"
      And the proxy forwards the held request
      And client "A" syncs
      Then the first push request of client "A" carries exactly the inserts of rows "n-1", "n-2" and "n-3", with body "milk" for "n-1"
      And a later push request of client "A" with a different batch_id carries the insert of row "n-4" and the update of row "n-1"

  Rule: retries after response loss, HTTP 429 or HTTP 503 reuse the same batch identity, mutation order and canonical content

    @cap:provision
    Scenario Outline: after <failure> the retry is byte-identical
      Given <fault>
      When client "A" syncs
      And client "A" syncs
      Then the proxy recorded at least 2 push requests from client "A"
      And every push request the proxy recorded from client "A" is byte-identical to the first
      And the retry was sent no earlier than <delay> after the failed attempt
      And client "A" shows the three inserts with status "accepted"

      Examples:
        | failure              | fault                                                                                                         | delay                 |
        | a lost response      | the proxy drops the response to the next push of client "A" after the server committed it                     | 0 seconds             |
        | HTTP 429             | the proxy answers the next push of client "A" with status 429, code "retry_later" and Retry-After "2"         | 2 seconds             |
        | HTTP 503             | the proxy answers the next push of client "A" with status 503, code "temporary_unavailable" and Retry-After "2" | 2 seconds           |
        | a transport error    | the proxy closes the connection of the next push of client "A" without answering                              | 0 seconds             |

    @cap:provision @cap:crash
    Scenario: a client restarted while in backoff resends the same bytes
      Given the proxy answers the next push of client "A" with status 503, code "temporary_unavailable" and Retry-After "2"
      And client "A" syncs
      When client "A" is killed and restarted
      And client "A" syncs
      Then every push request the proxy recorded from client "A" is byte-identical to the first

  Rule: a batch ID is never reused with changed content, and an operational failure is never retried as a different execution

    @negative @cap:provision
    Scenario: edits to sealed rows made during backoff do not change the retried request
      Given the proxy answers the next push of client "A" with status 503, code "temporary_unavailable" and Retry-After "2"
      And client "A" syncs
      When client "A" executes SQL "UPDATE notes SET body = 'oat' WHERE id = 'n-1'"
      And client "A" executes SQL "DELETE FROM notes WHERE id = 'n-3'"
      And client "A" syncs
      And client "A" syncs
      Then every push request the proxy recorded from client "A" under the first batch_id is byte-identical to the first
      And no two push requests the proxy recorded from client "A" share a batch_id but differ in mutations, order or content
      And the update of row "n-1" and the delete of row "n-3" reached the server in a later batch with a different batch_id

    @negative @cap:provision @cap:clients
    Scenario: a generation expiry starts a successor batch with a new ID and the old batch is never resent
      Given the proxy holds the next push request of client "A" before forwarding it
      And client "A" syncs in the background
      And the operator expires the client generation of client "A"
      When the proxy forwards the held request
      And client "A" syncs
      Then the first push request of client "A" was answered 409 with error code "client_generation_expired"
      And client "A" connected again before pushing
      And the next push request of client "A" has a new batch_id, the new client_generation and the same three mutations with byte-identical content
      And the proxy recorded no later push request from client "A" with the first batch_id
      And client "A" shows the first batch unchanged and not scheduled for sending
