@SYNC-STATE-002 @server @client
Feature: Non-Retryable Failures Are Explicit
  Some failures will not go away by trying again: a malformed request, a lost
  authorization, a reused idempotency key, a retired client, an unsupported
  protocol, an integrity fault on the server, or a response that breaks the
  protocol contract. Pretending otherwise, by skipping the failed step and
  syncing on, leaves a client that looks healthy while its data silently
  drifts. So the server says plainly that the failure is final (an error
  envelope with "retryable": false and the code's documented status), and the
  client stops in a typed state that names the operation, the code and the
  recovery action, keeps every pending intent for inspection, and sends no
  further push, pull or rebuild until it is explicitly told to retry. The
  three failures with a defined recovery (schema_mismatch and
  client_generation_expired lead to a reconnect, rebuild_restart_required to a
  new attempt for that scope) are handled by that recovery, never by carrying
  on as if the request had worked.

  The harness has the proxy answer one request with each non-retryable error
  or with a response that breaks the contract, then reads the client's status,
  its request log for the rest of that sync and of a following sync, and its
  queue; on the server side it provokes each non-retryable error and checks
  the envelope.

  Background:
    Given a registered table "tasks" with columns:
      | column   | type   | key |
      | id       | string | yes |
      | owner_id | string | no  |
      | title    | string | no  |
    And table "tasks" places each row in scope "user:{owner_id}"
    And client "A" of user "alice" has connected and rebuilt every assigned scope

  @cap:provision
  Rule: every non-retryable protocol failure enters an explicit typed error state

    Scenario Outline: a non-retryable error answer stops the client in a typed error
      Given client "A" executes SQL:
        """
        INSERT INTO tasks (id, owner_id, title) VALUES ('t-1', 'alice', 'must not be lost');
        """
      And client "A" has been restarted on the same database, so that its next sync connects first
      And the proxy will answer the next <endpoint> request of client "A" with status <status> and the error body <body>
      When client "A" syncs
      Then the sync of client "A" ends with completion "error"
      And client "A" is in state "error" with a failure whose operation is "<operation>", code is "<code>" and retryable is false
      And client "A" still holds the mutation for row "t-1" and it is inspectable

      Examples:
        | endpoint | status | code                     | operation  | body                                                                                                                   |
        | connect  | 426    | upgrade_required         | connecting | {"error":{"code":"upgrade_required","message":"upgrade","retryable":false,"minimum_client_version":"9.0.0","received_client_version":"1.0.0"}} |
        | connect  | 401    | auth_required            | connecting | {"error":{"code":"auth_required","message":"sign in","retryable":false}}                                               |
        | push     | 400    | invalid_request          | pushing    | {"error":{"code":"invalid_request","message":"request is invalid","retryable":false}}                                  |
        | push     | 409    | idempotency_conflict     | pushing    | {"error":{"code":"idempotency_conflict","message":"batch reused","retryable":false}}                                   |
        | push     | 409    | client_retired           | pushing    | {"error":{"code":"client_retired","message":"client retired","retryable":false}}                                       |
        | push     | 500    | sync_integrity_failure   | pushing    | {"error":{"code":"sync_integrity_failure","message":"sync operation failed","retryable":false}}                        |

    Scenario Outline: a non-retryable error on pull or rebuild stops the client in a typed error
      Given client "A" <rebuild state>
      And the proxy will answer the next <endpoint> request of client "A" with status <status> and the error body <body>
      When client "A" syncs
      Then the sync of client "A" ends with completion "error"
      And client "A" is in state "error" with a failure whose operation is "<operation>", code is "<code>" and retryable is false

      Examples:
        | endpoint | status | code                   | operation  | rebuild state                               | body                                                                                            |
        | pull     | 400    | invalid_request        | pulling    | has no rebuild pending                      | {"error":{"code":"invalid_request","message":"request is invalid","retryable":false}}           |
        | pull     | 401    | auth_required          | pulling    | has no rebuild pending                      | {"error":{"code":"auth_required","message":"sign in","retryable":false}}                        |
        | pull     | 500    | sync_integrity_failure | pulling    | has no rebuild pending                      | {"error":{"code":"sync_integrity_failure","message":"sync operation failed","retryable":false}} |
        | rebuild  | 400    | invalid_request        | rebuilding | will be told by its next pull to rebuild scope "user:alice" | {"error":{"code":"invalid_request","message":"request is invalid","retryable":false}}           |

  @cap:provision
  Rule: every non-retryable local contract failure enters an explicit typed error state

    @cap:sourceSql
    Scenario Outline: a response that breaks the contract stops the client in a typed error
      Given the harness has committed and capture has materialized:
        """
        INSERT INTO public.tasks (id, owner_id, title) VALUES ('t-2', 'alice', 'remote');
        """
      And client "A" executes SQL:
        """
        INSERT INTO tasks (id, owner_id, title) VALUES ('t-3', 'alice', 'local');
        """
      And the proxy will apply <defect> to the next <endpoint> response to client "A"
      When client "A" syncs
      Then the sync of client "A" ends with completion "error"
      And client "A" is in state "error" with a failure whose operation is "<operation>" and retryable is false
      And client "A" has no row "t-2" in table "tasks"

      Examples:
        | endpoint | operation | defect                                                                    |
        | push     | pushing   | removing the outcome of the mutation for row "t-3" from "accepted"        |
        | push     | pushing   | setting "/batch_id" to "00000000-0000-4000-8000-000000000001"             |
        | pull     | pulling   | removing the member "checksums" from the terminal page                   |
        | pull     | pulling   | adding "checksums" {} to a page with "has_more" true                      |
        | pull     | pulling   | adding a change for scope "user:bob"                                      |
        | pull     | pulling   | flipping one hex digit of the "row_checksum" digest of the change for "t-2" |
        | pull     | pulling   | adding the unknown top-level member "extra" with value 1                  |

  @cap:provision
  Rule: the client does not continue silent degraded synchronization

    @negative
    Scenario: after a non-retryable error no sync work is sent until an explicit retry
      Given client "A" executes SQL:
        """
        INSERT INTO tasks (id, owner_id, title) VALUES ('t-4', 'alice', 'waits');
        """
      And the proxy will answer the next push request of client "A" with status 409 and the error body {"error":{"code":"idempotency_conflict","message":"batch reused","retryable":false}}
      When client "A" syncs
      And client "A" syncs
      And client "A" syncs
      Then client "A" sent no pull or rebuild request after the refused push
      And client "A" sent no further push request
      And client "A" is still in state "error"
      And client "A" still reports the sealed batch of the refused push with its exact request bytes
      When the application asks client "A" to retry after the error
      Then the states client "A" went through continue with "error", "local_ready", "connecting"

    @negative @cap:clients
    Scenario: an expired generation on push is met with a reconnect before any further work
      Given client "A" executes SQL:
        """
        INSERT INTO tasks (id, owner_id, title) VALUES ('t-5', 'alice', 'recovers');
        """
      And when the next push request of client "A" reaches the proxy, the server will first expire client "A"
      When client "A" syncs
      Then the push request of client "A" was answered 409 with error code "client_generation_expired"
      And the request client "A" sent right after that push is a connect request
      And client "A" sent no pull or rebuild request between that push and that connect
      And the sync of client "A" ends with completion "idle"
      And client "A" reports the mutation for row "t-5" as accepted

    @negative @cap:schema
    Scenario: a schema mismatch on pull is met with a reconnect before any further work
      Given when the next pull request of client "A" reaches the proxy, the server will first publish a class 2 manifest that adds a nullable column "note" of type "string" to table "tasks"
      When client "A" syncs
      Then the pull request of client "A" was answered 422 with error code "schema_mismatch"
      And the request client "A" sent right after that pull is a connect request
      And client "A" reports the current manifest as its installed schema
      And the sync of client "A" ends with completion "idle"

    @negative @cap:sourceSql
    Scenario: rebuild_restart_required starts a new attempt for that scope only
      Given client "A" uses rebuild page limit 1
      And client "A" will be told by its next pull to rebuild scope "user:alice"
      And the harness has committed and capture has materialized:
        """
        INSERT INTO public.tasks (id, owner_id, title) VALUES ('t-6', 'alice', 'six'), ('t-7', 'alice', 'seven');
        """
      And the proxy will answer the second rebuild request of client "A" with status 409 and the error body {"error":{"code":"rebuild_restart_required","message":"rebuild must restart","retryable":false,"scope_id":"user:alice"}}
      When client "A" syncs
      Then the next rebuild request client "A" sent for scope "user:alice" has "/cursor" null and a "/rebuild_id" different from the failed attempt's
      And client "A" did not install any cursor for scope "user:alice" from the failed attempt

  @cap:provision
  Rule: the server reports a non-retryable failure as final and serves nothing with it

    @negative
    Scenario Outline: each non-retryable server error has its status, retryable false and no success member
      When <request>
      Then the response status is <status> with error code "<code>"
      And the error body has "retryable" false
      And the error body carries exactly the extra members <extras>
      And the response has none of the members "accepted", "rejected", "changes", "records", "scope_cursors", "final_scope_cursor", "checksums" and "checksum"

      Examples:
        | request                                                                                 | status | code                  | extras                                    |
        | client "A" sends its next pull request with "/limit" set to 0                            | 400    | invalid_request       | none beyond an optional complete set of "field", "minimum" and "maximum" |
        | client "A" pulls without an Authorization header                                        | 401    | auth_required         | none                                      |
        | client "A" sends its next connect request with "/protocol_version" set to 2             | 426    | upgrade_required      | "required_protocol_version" and "received_protocol_version" |
        | client "A" pulls presenting its cursor for "user:alice" with its last character removed | 400    | invalid_request       | none                                      |
        | client "A" pushes a second batch reusing the last batch_id with different content        | 409    | idempotency_conflict  | none                                      |

    @negative
    Scenario: a forged cursor next to a valid one gets no partial page
      Given user "alice" is assigned scope "project:p1"
      And client "A" has pulled and holds cursors for scopes "user:alice" and "project:p1"
      When client "A" pulls presenting its cursor for "project:p1" unchanged and its cursor for "user:alice" with the character at its middle position replaced
      Then the response status is 400 with error code "invalid_request"
      And the response has no member "/changes" and no member "/scope_cursors"
