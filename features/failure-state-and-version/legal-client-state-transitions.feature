@SYNC-STATE-004 @client
Feature: Legal Client State Transitions
  A sync client is a state machine with exactly eleven states: uninitialized,
  local_ready, connecting, schema_applying, ready, pushing, pulling,
  rebuilding, backoff, error and stopped. Its adjacency map allows exactly 50
  ordered pairs and forbids the other 71. Two extra rules narrow it: backoff
  returns only to the operation it interrupted (as persisted in its backoff
  record) or to connecting, and leaving error or stopped for local_ready needs
  an explicit call by the application (retry after error, or a new start),
  never a timer. A state name outside the eleven, or a pair outside the map,
  is a non-retryable local contract error (invalid_state_transition) and
  leaves every durable record (queue, cursors, rebuild attempts, schema,
  assignment, backoff) exactly as it was. The map is the one of ADR 005; in
  particular local_ready -> backoff is not in it.

  The harness checks the map two ways. Through the client's optional
  transition validator it tries all 121 ordered pairs and a set of unknown
  names, comparing a snapshot of the durable sync state before and after each
  refused one; for a pair leaving backoff towards pushing, pulling or
  rebuilding the validator is told that the persisted interrupted operation is
  the target itself. Through the public surface only, it drives the client
  through normal syncs, retryable and non-retryable failures, stops, restarts
  and explicit recoveries, and checks every consecutive pair of the client's
  status log against the map.

  Background:
    Given a registered table "tasks" with columns:
      | column   | type   | key |
      | id       | string | yes |
      | owner_id | string | no  |
      | title    | string | no  |
    And table "tasks" places each row in scope "user:{owner_id}"
    And client "A" of user "alice" has synced

  @cap:provision
  Rule: a client permits exactly the transitions of the adjacency map

    Scenario: every listed transition is permitted
      When the transition validator of client "A" is asked about each of these 50 pairs:
        | from            | to              |
        | uninitialized   | local_ready     |
        | uninitialized   | error           |
        | uninitialized   | stopped         |
        | local_ready     | connecting      |
        | local_ready     | error           |
        | local_ready     | stopped         |
        | connecting      | schema_applying |
        | connecting      | ready           |
        | connecting      | backoff         |
        | connecting      | error           |
        | connecting      | stopped         |
        | schema_applying | ready           |
        | schema_applying | rebuilding      |
        | schema_applying | error           |
        | schema_applying | stopped         |
        | ready           | connecting      |
        | ready           | pushing         |
        | ready           | pulling         |
        | ready           | rebuilding      |
        | ready           | error           |
        | ready           | stopped         |
        | pushing         | connecting      |
        | pushing         | ready           |
        | pushing         | pushing         |
        | pushing         | pulling         |
        | pushing         | backoff         |
        | pushing         | error           |
        | pushing         | stopped         |
        | pulling         | connecting      |
        | pulling         | ready           |
        | pulling         | pulling         |
        | pulling         | rebuilding      |
        | pulling         | backoff         |
        | pulling         | error           |
        | pulling         | stopped         |
        | rebuilding      | connecting      |
        | rebuilding      | ready           |
        | rebuilding      | rebuilding      |
        | rebuilding      | backoff         |
        | rebuilding      | error           |
        | rebuilding      | stopped         |
        | backoff         | connecting      |
        | backoff         | pushing         |
        | backoff         | pulling         |
        | backoff         | rebuilding      |
        | backoff         | error           |
        | backoff         | stopped         |
        | error           | local_ready     |
        | error           | stopped         |
        | stopped         | local_ready     |
      Then the validator accepts each of them

    Scenario: every transition a client makes in practice is in the map
      Given client "A" executes SQL:
        """
        INSERT INTO tasks (id, owner_id, title) VALUES ('t-1', 'alice', 'one');
        """
      And the proxy will answer the next push request of client "A" with status 503, code "temporary_unavailable" and Retry-After "1"
      When client "A" syncs
      And the Retry-After delay has passed
      And client "A" syncs
      And the proxy will answer the next pull request of client "A" with status 500 and the error body {"error":{"code":"sync_integrity_failure","message":"sync operation failed","retryable":false}}
      And client "A" syncs
      And the application asks client "A" to retry after the error
      And client "A" syncs
      And the application stops client "A"
      And the application starts client "A"
      And client "A" syncs
      Then every consecutive pair of states in the status log of client "A" is one of the 50 legal pairs
      And the status log of client "A" contains the pairs "pushing" -> "backoff", "backoff" -> "pushing", "pulling" -> "error", "error" -> "local_ready" and "stopped" -> "local_ready"

  @cap:provision
  Rule: an unlisted transition fails as a non-retryable local contract error without mutating durable sync state

    @negative
    Scenario: every unlisted transition is refused and changes nothing
      Given the harness snapshots the durable sync state of client "A"
      When the transition validator of client "A" is asked about each of these 71 pairs:
        | from            | to              |
        | uninitialized   | uninitialized   |
        | uninitialized   | connecting      |
        | uninitialized   | schema_applying |
        | uninitialized   | ready           |
        | uninitialized   | pushing         |
        | uninitialized   | pulling         |
        | uninitialized   | rebuilding      |
        | uninitialized   | backoff         |
        | local_ready     | uninitialized   |
        | local_ready     | local_ready     |
        | local_ready     | schema_applying |
        | local_ready     | ready           |
        | local_ready     | pushing         |
        | local_ready     | pulling         |
        | local_ready     | rebuilding      |
        | local_ready     | backoff         |
        | connecting      | uninitialized   |
        | connecting      | local_ready     |
        | connecting      | connecting      |
        | connecting      | pushing         |
        | connecting      | pulling         |
        | connecting      | rebuilding      |
        | schema_applying | uninitialized   |
        | schema_applying | local_ready     |
        | schema_applying | connecting      |
        | schema_applying | schema_applying |
        | schema_applying | pushing         |
        | schema_applying | pulling         |
        | schema_applying | backoff         |
        | ready           | uninitialized   |
        | ready           | local_ready     |
        | ready           | schema_applying |
        | ready           | ready           |
        | ready           | backoff         |
        | pushing         | uninitialized   |
        | pushing         | local_ready     |
        | pushing         | schema_applying |
        | pushing         | rebuilding      |
        | pulling         | uninitialized   |
        | pulling         | local_ready     |
        | pulling         | schema_applying |
        | pulling         | pushing         |
        | rebuilding      | uninitialized   |
        | rebuilding      | local_ready     |
        | rebuilding      | schema_applying |
        | rebuilding      | pushing         |
        | rebuilding      | pulling         |
        | backoff         | uninitialized   |
        | backoff         | local_ready     |
        | backoff         | schema_applying |
        | backoff         | ready           |
        | backoff         | backoff         |
        | error           | uninitialized   |
        | error           | connecting      |
        | error           | schema_applying |
        | error           | ready           |
        | error           | pushing         |
        | error           | pulling         |
        | error           | rebuilding      |
        | error           | backoff         |
        | error           | error           |
        | stopped         | uninitialized   |
        | stopped         | connecting      |
        | stopped         | schema_applying |
        | stopped         | ready           |
        | stopped         | pushing         |
        | stopped         | pulling         |
        | stopped         | rebuilding      |
        | stopped         | backoff         |
        | stopped         | error           |
        | stopped         | stopped         |
      Then the validator refuses each of them with the non-retryable local contract error "invalid_state_transition"
      And the durable sync state of client "A" equals the snapshot

    @negative
    Scenario: backoff returns only to the operation it interrupted or to connecting
      Given the harness snapshots the durable sync state of client "A"
      When the transition validator of client "A" is asked to leave "backoff" for each of these targets with the persisted interrupted operation:
        | interrupted | to         | verdict                                                                        |
        | pulling     | pulling    | accepts the transition                                                          |
        | pulling     | connecting | accepts the transition                                                          |
        | pulling     | pushing    | refuses it with the non-retryable local contract error "invalid_state_transition" |
        | pulling     | rebuilding | refuses it with the non-retryable local contract error "invalid_state_transition" |
        | pushing     | pulling    | refuses it with the non-retryable local contract error "invalid_state_transition" |
        | rebuilding  | pushing    | refuses it with the non-retryable local contract error "invalid_state_transition" |
      Then the validator gives each of them its verdict
      And the durable sync state of client "A" equals the snapshot

  @cap:provision
  Rule: an unknown state fails as a non-retryable local contract error without mutating durable sync state

    @negative
    Scenario: a state name outside the eleven is refused
      Given the harness snapshots the durable sync state of client "A"
      When the transition validator of client "A" is asked about each of these 8 pairs:
        | from        | to         |
        | Ready       | pulling    |
        | ready       | Pulling    |
        | paused      | ready      |
        |             | ready      |
        | ready       |            |
        | local-ready | connecting |
        | ready       | fetching   |
        | ready       | idle       |
      Then the validator refuses each of them with the non-retryable local contract error "invalid_state_transition"
      And the durable sync state of client "A" equals the snapshot

  @cap:provision
  Rule: accepting any other transition is a violation, including stopped -> pulling and error -> ready

    @negative
    Scenario: a stopped client does not start pulling when asked to sync
      Given the application stops client "A"
      And the harness snapshots the durable sync state of client "A"
      When client "A" syncs
      Then client "A" sent no request after it was stopped
      And client "A" is still in state "stopped"
      And the status log of client "A" has no pair leaving "stopped" other than "stopped" -> "local_ready"
      And the durable sync state of client "A" equals the snapshot

    @negative
    Scenario: an errored client is not made ready by a sync or by time passing
      Given the proxy will answer the next pull request of client "A" with status 500 and the error body {"error":{"code":"sync_integrity_failure","message":"sync operation failed","retryable":false}}
      And client "A" syncs
      When client "A" syncs
      And 5 seconds pass
      And client "A" syncs
      Then client "A" is still in state "error"
      And the status log of client "A" has no pair "error" -> "ready"
      When the application asks client "A" to retry after the error
      Then the status log of client "A" continues with "error" -> "local_ready" -> "connecting"

    @negative
    Scenario: a backoff interrupted during pull resumes pulling, not pushing, even with new local writes
      Given the proxy will answer the next pull request of client "A" with status 503, code "capture_pending" and Retry-After "1"
      And client "A" syncs
      And client "A" executes SQL:
        """
        INSERT INTO tasks (id, owner_id, title) VALUES ('t-2', 'alice', 'written during backoff');
        """
      When the Retry-After delay has passed
      And client "A" syncs
      Then the state client "A" entered right after "backoff" is "pulling" or "connecting"
      And the status log of client "A" has no pair "backoff" -> "ready"

    @negative @cap:crash
    Scenario: a client restarted during backoff waits in local_ready and never jumps from local_ready to backoff
      Given the proxy will answer the next push request of client "A" with status 503, code "temporary_unavailable" and Retry-After "5"
      And client "A" executes SQL:
        """
        INSERT INTO tasks (id, owner_id, title) VALUES ('t-3', 'alice', 'queued before the crash');
        """
      And client "A" syncs
      When the harness kills client "A" and restarts it on the same database
      And client "A" syncs
      Then the status log of client "A" after the restart begins "uninitialized" -> "local_ready" -> "connecting"
      And the connect request was sent no earlier than the stored retry time
      And the status log of client "A" has no pair "local_ready" -> "backoff"
