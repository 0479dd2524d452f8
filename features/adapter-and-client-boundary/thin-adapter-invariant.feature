@SYNC-BOUND-001 @server @internal
Feature: Thin Adapter Invariant
  The HTTP adapter in front of the database only translates. It
  authenticates, parses, calls the one canonical extension entry point for the
  endpoint and maps the canonical result to an HTTP status and body. Scope,
  conflict, rebuild and write decisions all belong to the extension. A second
  implementation of any of them in the adapter, or a call from the adapter to
  some other sync service, would let two engines disagree about the same
  request. The harness compares each HTTP response with the canonical result
  recorded for that request by server inspection. It withdraws the adapter's
  permission on one entry point to show that the adapter has no fallback of
  its own, and it watches the adapter's outbound connections.

  Background:
    Given a registered table "tasks" with columns:
      | column   | type   | key | nullable |
      | id       | string | yes | no       |
      | owner_id | string | no  | no       |
      | title    | string | no  | no       |
    And table "tasks" places each row in scope "user:{owner_id}"
    And client "A" of user "alice" has connected and rebuilt every assigned scope

  Rule: Each sync endpoint delegates its semantic operation to the canonical extension function

    @cap:inspect
    Scenario Outline: A <endpoint> request is answered with the extension's canonical result
      When client "A" <action>
      Then server inspection shows exactly one call of the canonical extension entry point for "<endpoint>" while serving that request, made by the adapter's runtime role
      And the HTTP status of the response is the status mapped from the canonical result's "error.code", or 200 for a success result
      And the response body is byte-identical to the canonical result after number normalization

      Examples:
        | endpoint | action                                                                                      |
        | connect  | connects                                                                                    |
        | push     | pushes a batch inserting task "t1" owned by "alice" with title "Call plumber"               |
        | pull     | pulls                                                                                       |
        | rebuild  | requests the first rebuild page of "user:alice"                                            |

    @cap:inspect
    Scenario: A push response is the extension's stored canonical text, byte for byte, also on replay
      Given client "A" has pushed batch "b1" inserting task "t2" owned by "alice"
      When client "A" resends batch "b1" unchanged
      Then both response bodies are byte-identical to the stored canonical response of batch "b1" shown by server inspection

  Rule: The adapter implements no independent scope, conflict, rebuild or synced-write decision and depends on no outbound sync service

    @negative @cap:provision
    Scenario Outline: Without its extension entry point the <endpoint> endpoint cannot succeed
      Given the operator revokes EXECUTE on the canonical extension entry point for "<endpoint>" from the adapter's runtime role
      When client "A" <action>
      Then the response status is not 200
      And the response status is 500 with error code "sync_integrity_failure" or 503 with error code "temporary_unavailable"
      And no durable state changed on the server
      When the operator grants EXECUTE on that entry point back to the adapter's runtime role
      And client "A" <action>
      Then the response status is 200

      Examples:
        | endpoint | action                                                                        |
        | connect  | connects                                                                      |
        | push     | pushes a batch inserting task "t3" owned by "alice" with title "Fix tap"      |
        | pull     | pulls                                                                         |
        | rebuild  | requests the first rebuild page of "user:alice"                               |

    @negative @cap:inspect
    Scenario: The adapter opens no outbound connection other than to its database while serving sync requests
      When client "A" syncs after writing task "t4" owned by "alice"
      Then server inspection shows that, while serving those requests, the adapter process opened network connections only to its PostgreSQL database
