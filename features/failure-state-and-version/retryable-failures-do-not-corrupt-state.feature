@SYNC-STATE-001 @server @client
Feature: Retryable Failures Do Not Corrupt State
  Networks drop, servers shed load and capture falls behind; each of these is
  answered by trying the same request again later. That is only safe if the
  failed attempt changed nothing that matters: on the client the mutation
  queue, sealed batches, installed schema, scope assignment, cursors, rebuild
  attempts and applied rows stay as they were, and the only new durable
  records are the retry bookkeeping (the backoff record with its interrupted
  operation, attempt count and next retry time). On the server a 429 or 503
  commits no part of the request. A page that failed, whether the server
  refused it or the bytes never arrived whole, shows no partial success:
  no rows, no cursors, no checksums, no outcomes.

  For the client, the harness snapshots all durable sync metadata at the
  moment the request to be failed reaches the proxy, makes the proxy answer it
  with a retryable status or break the transport, and compares the snapshot
  afterwards, excluding only the backoff record; then it lets the retry through and checks that the request
  was repeated byte for byte and the end state is the one a clean run
  reaches. For the server, it checks that retryable error responses carry no
  success members and that the state behind them is unchanged.

  Background:
    Given a registered table "tasks" with columns:
      | column   | type   | key |
      | id       | string | yes |
      | owner_id | string | no  |
      | title    | string | no  |
    And table "tasks" places each row in scope "user:{owner_id}"
    And client "A" of user "alice" has connected and rebuilt every assigned scope

  @cap:provision
  Rule: a retryable failure preserves queue, schema, assignment, cursor, rebuild and apply state except for retry bookkeeping

    @negative @cap:sourceSql
    Scenario Outline: a retryable answer to one request leaves only retry bookkeeping behind
      Given the harness has committed and capture has materialized:
        """
        INSERT INTO public.tasks (id, owner_id, title) VALUES ('t-1', 'alice', 'remote');
        """
      And client "A" executes SQL:
        """
        INSERT INTO tasks (id, owner_id, title) VALUES ('t-2', 'alice', 'local');
        """
      And client "A" <rebuild state>
      And when the next <endpoint> request of client "A" reaches the proxy, the harness will snapshot the durable sync state of client "A" and the proxy will answer it with <failure>
      When client "A" syncs
      Then the sync of client "A" ends with completion "blocked"
      And client "A" is in state "backoff" with operation "<operation>"
      And the durable sync state of client "A" equals that snapshot except for its backoff record
      And the backoff record of client "A" names the interrupted <endpoint> request, attempt 1 and a next retry time no earlier than any Retry-After it was given

      Examples:
        | endpoint | failure                                                                  | operation  | rebuild state                                   |
        | connect  | status 503, code "temporary_unavailable" and Retry-After "2"              | connecting | has been restarted on the same database with no rebuild pending |
        | push     | status 503, code "temporary_unavailable" and Retry-After "2"              | pushing    | has no rebuild pending                          |
        | push     | status 429, code "retry_later" and Retry-After "2"                        | pushing    | has no rebuild pending                          |
        | push     | a transport error after the server committed the push                     | pushing    | has no rebuild pending                          |
        | pull     | status 503, code "capture_pending" and Retry-After "2"                    | pulling    | has no rebuild pending                          |
        | pull     | a transport error before the request reaches the server                   | pulling    | has no rebuild pending                          |
        | pull     | a response body cut off after half of its bytes                            | pulling    | has no rebuild pending                          |
        | rebuild  | status 503, code "temporary_unavailable" and Retry-After "2"              | rebuilding | will be told by its next pull to rebuild scope "user:alice" |
        | rebuild  | a transport error after the server answered                               | rebuilding | will be told by its next pull to rebuild scope "user:alice" |

    Scenario Outline: the retry repeats the interrupted request byte for byte and reaches the clean end state
      Given client "A" executes SQL:
        """
        INSERT INTO tasks (id, owner_id, title) VALUES ('t-3', 'alice', 'local');
        """
      And the proxy will answer the next <endpoint> request of client "A" with <failure>
      When client "A" syncs
      And the Retry-After delay has passed
      And client "A" syncs
      Then the <endpoint> request client "A" sent after the failure has exactly the same bytes as the failed one
      And the sync of client "A" ends with completion "idle"
      And client "A" reports the mutation for row "t-3" as accepted exactly once
      And the server has exactly one row "t-3" in table "tasks"
      And client "A" has no backoff record

      Examples:
        | endpoint | failure                                                       |
        | push     | status 503, code "temporary_unavailable" and Retry-After "1"  |
        | push     | a transport error after the server committed the push          |
        | pull     | status 503, code "capture_pending" and Retry-After "1"         |

    @negative @cap:sourceSql
    Scenario: a retryable failure in the middle of a multi-page rebuild keeps the pages already applied and the same attempt
      Given the harness has committed and capture has materialized:
        """
        INSERT INTO public.tasks (id, owner_id, title)
        SELECT 'r-' || g, 'alice', 'row ' || g FROM generate_series(1, 5) AS g;
        """
      And client "A" uses rebuild page limit 2
      And client "A" will be told by its next pull to rebuild scope "user:alice"
      And the proxy will answer the second rebuild request of client "A" with status 503, code "temporary_unavailable" and Retry-After "1"
      When client "A" syncs
      Then client "A" reports one rebuild attempt for scope "user:alice" with the rebuild_id of its first request and the continuation returned by page 1
      And client "A" has exactly the 2 rows of page 1 from that rebuild
      When the Retry-After delay has passed
      And client "A" syncs
      Then the rebuild requests client "A" sent after the failure repeat the failed request's bytes first
      And client "A" has rows "r-1" through "r-5" and reports the final rebuild cursor installed for scope "user:alice"

    @negative @cap:capture
    Scenario: a server answering capture_pending stages nothing and moves no checkpoint
      Given client "A" has pulled and holds its cursor C0 for scope "user:alice"
      And the capture worker is paused
      And client "A" has pushed an insert of row "t-4" and holds its server version
      When client "A" pulls presenting C0
      Then the response status is 503 with error code "capture_pending"
      And the response has a valid "Retry-After" header
      When client "A" sends its next rebuild request for scope "user:alice" with "/cursor" set to null
      Then the response status is 503 with error code "capture_pending"
      When the capture worker resumes
      And capture has materialized every committed source transaction
      And client "A" pulls presenting C0
      Then the pull response lists exactly these changes:
        | scope      | table | op     | pk  |
        | user:alice | tasks | upsert | t-4 |

  @cap:provision
  Rule: a failed page exposes no partial success

    @negative @cap:capture
    Scenario Outline: a retryable error response carries no success member
      Given the capture worker is paused
      And client "A" has pushed an insert of row "t-5" and holds its server version
      When <request>
      Then the response status is 503 with error code "capture_pending"
      And the error body has "retryable" true and exactly the members "code", "message" and "retryable"
      And the response has none of the members <success members>

      Examples:
        | request                                                                                   | success members                                                                        |
        | client "A" pulls                                                                          | "changes", "scope_cursors", "scope_updates", "rebuild", "has_more", "checksums"        |
        | client "A" sends its next rebuild request for scope "user:alice" with "/cursor" set to null | "records", "cursor", "has_more", "final_scope_cursor", "checksum"                      |

    @negative @cap:sourceSql
    Scenario: a pull page whose transfer breaks is applied not at all
      Given the harness has committed and capture has materialized:
        """
        INSERT INTO public.tasks (id, owner_id, title) VALUES ('t-6', 'alice', 'six'), ('t-7', 'alice', 'seven');
        """
      And when the next pull request of client "A" reaches the proxy, the harness will snapshot the durable sync state of client "A" and the proxy will answer it with a response body cut off after half of its bytes
      When client "A" syncs
      Then client "A" has neither row "t-6" nor row "t-7" in table "tasks"
      And the durable sync state of client "A" equals that snapshot except for its backoff record

    @negative
    Scenario: a lost push response is not treated as partial success
      Given client "A" executes SQL:
        """
        INSERT INTO tasks (id, owner_id, title) VALUES ('t-8', 'alice', 'eight'), ('t-9', 'alice', 'nine');
        """
      And the proxy will drop the next push response to client "A" after the server has answered
      When client "A" syncs
      Then client "A" reports the mutations for rows "t-8" and "t-9" as sealed and not yet reconciled
      And client "A" reports no server version for rows "t-8" and "t-9"
