@SYNC-SCHEMA-005 @server @client
Feature: Expired Client Rebuild
  A client that has stopped acknowledging progress would otherwise hold back
  compaction forever, so the server expires it after a finite, positive stale
  interval. Only acknowledging a newer cursor counts as activity. Expiry
  retires a client generation, not the client's history. On reconnect the
  client gets a new generation and null cursors for the affected scopes, and
  its mutation queue and the server's idempotency ledgers stay as they were. A
  push refused for its stale generation leaves no ledger trace. The client
  moves the unchanged mutations, with their IDs, into a new batch and never
  resends or edits the refused one. The harness drives the server clock, reads
  generations and error bodies on the wire, replays completed batches to show
  the ledgers survive, and compares the client's batches before and after.

  Background:
    Given a registered table "tasks" with columns:
      | column   | type   | nullable | key |
      | id       | string | false    | yes |
      | owner_id | string | false    | no  |
      | title    | string | false    | no  |
    And table "tasks" places each row in scope "user:{owner_id}"
    And the server stale-client interval is 30 days

  Rule: Expiry uses the finite positive stale interval and counts only cursor acknowledgement as activity

    @cap:clock @cap:clients
    Scenario: Connect and push traffic alone does not keep a client alive
      Given the harness client "H" of user "alice" has completed a sync
      When the server clock advances by 20 days
      And the harness client "H" connects presenting its installed schema
      And the harness client "H" pushes batch "b1" inserting task "t1"
      And the server clock advances by 11 days
      And the operator runs client expiry
      And the harness client "H" pulls presenting its current cursors
      Then the response status is 409 with error code "client_generation_expired"

    @cap:clock @cap:clients
    Scenario: A pull that presents a newer cursor keeps a client alive
      Given the harness client "H" of user "alice" has completed a sync
      And the server table "tasks" gains row "t2" owned by "alice"
      When the server clock advances by 20 days
      And the harness client "H" pulls presenting its current cursors
      And the harness client "H" pulls presenting the cursors the previous pull returned
      And the server clock advances by 11 days
      And the operator runs client expiry
      And the harness client "H" pulls presenting its current cursors
      Then the response status is 200

    @cap:clock @cap:clients
    Scenario: A client that never acknowledged is measured from its creation
      Given the harness client "H" of user "alice" has connected once and never pulled
      When the server clock advances by 31 days
      And the operator runs client expiry
      And the harness client "H" pulls presenting null cursors
      Then the response status is 409 with error code "client_generation_expired"

    @negative @cap:provision
    Scenario Outline: The server refuses to start with stale-client interval <value>
      When the operator starts the server with stale-client interval <value>
      Then the server refuses to start and names the stale-client interval setting
      And the server does not start with a default interval

      Examples:
        | value      |
        | 0          |
        | -1 days    |
        | infinity   |
        | thirty     |
        | (empty)    |

  Rule: Reconnect issues a new generation with null affected cursors and keeps the queue and the idempotency ledgers

    @cap:clock @cap:clients
    Scenario: An expired client reconnects to a larger generation and rebuilds
      Given the harness client "H" of user "alice" has completed a sync with generation "g1"
      And the server clock advances by 31 days
      And the operator runs client expiry
      When the harness client "H" connects presenting its installed schema, generation "g1" and its cursors
      Then the response status is 200
      And member "client_generation" is an integer greater than "g1"
      And member "scope_cursor_updates" has null for "user:alice"

    @cap:clock @cap:clients @cap:compaction
    Scenario: A batch completed before expiry still replays byte for byte afterwards
      Given the harness client "H" of user "alice" has completed a sync with generation "g1"
      And the harness client "H" has pushed batch "b1" inserting task "t1" and recorded the response bytes as "r1"
      And the server clock advances by 31 days
      And the operator runs client expiry
      And the harness client "H" has reconnected and received a new generation
      And the operator compacts every scope
      When the harness client "H" resends batch "b1" exactly as first sent, with generation "g1"
      Then the response status is 200
      And the response body is byte-identical to "r1"

    @negative @cap:clock @cap:clients
    Scenario Outline: Requests with the expired generation are refused after reconnect
      Given the harness client "H" of user "alice" has completed a sync with generation "g1"
      And the server clock advances by 31 days
      And the operator runs client expiry
      And the harness client "H" has reconnected and received generation "g2"
      When the harness client "H" sends a valid <endpoint> request with generation "g1"
      Then the response status is 409 with error code "client_generation_expired"
      And the error body has "current_client_generation" equal to "g2"

      Examples:
        | endpoint                  |
        | push of a new batch       |
        | pull                      |
        | rebuild of "user:alice"   |

  Rule: A first-execution generation rejection allocates no ledger state

    @negative @cap:clock @cap:clients
    Scenario: The refused batch identity is free for a first execution under the new generation
      Given the harness client "H" of user "alice" has completed a sync with generation "g1"
      And the server clock advances by 31 days
      And the operator runs client expiry
      When the harness client "H" pushes batch "b2" inserting task "t3" with generation "g1"
      Then the response status is 409 with error code "client_generation_expired"
      When the harness client "H" reconnects and pushes batch "b2" inserting task "t3" with the new generation
      Then the response status is 200
      And the push response lists the insert of "t3" as "applied"

  Rule: The client moves unchanged mutations to a new successor batch with the same IDs and leaves the old sealed batch immutable and unsent

    @cap:clock @cap:clients
    Scenario: The client answers a generation rejection with a successor batch
      Given client "A" of user "alice" has connected and rebuilt every assigned scope
      And client "A" executes SQL:
        """
        INSERT INTO tasks (id, owner_id, title) VALUES ('t4', 'alice', 'Water plants')
        """
      And client "A" executes SQL:
        """
        INSERT INTO tasks (id, owner_id, title) VALUES ('t5', 'alice', 'Pay rent')
        """
      And the server clock advances by 31 days
      And the operator runs client expiry
      When client "A" syncs
      Then the proxy recorded, from client "A", a push of batch "old" answered 409 "client_generation_expired", then a connect, then a push of a batch "new"
      And batch "new" has a different "batch_id" from batch "old" and carries the new "client_generation"
      And the mutations of batch "new" have the same "mutation_id"s, in the same order, with byte-identical mutation objects as batch "old"
      And the push of batch "new" is answered 200 with both mutations "applied"
      And client "A" inspection still shows batch "old" with request bytes identical to what was first sent
      And the proxy recorded exactly one push of batch "old"

    @negative @cap:clock @cap:clients @cap:crash
    Scenario: The old batch is still not resent after a restart
      Given the server table "tasks" gains row "t5" owned by "alice"
      And client "A" of user "alice" has connected and rebuilt every assigned scope
      And client "A" executes SQL:
        """
        UPDATE tasks SET title = 'Pay rent today' WHERE id = 't5'
        """
      And the server clock advances by 31 days
      And the operator runs client expiry
      And client "A" is armed to crash at "after_push_response_received"
      When client "A" syncs
      And the harness restarts client "A"
      And client "A" syncs
      Then every push the proxy recorded from client "A" with the expired generation has the same "batch_id"
      And that "batch_id" was answered 409 and never sent again
      And the mutation ID of the title update appears in exactly one batch answered 200
