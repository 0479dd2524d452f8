@SYNC-BOUND-003 @client
Feature: Native Client Responsibility Boundary
  A native client owns everything that happens on the device: application
  SQL over SQLite, the durable queue, deciding when to connect, push, pull,
  rebuild and retry, verifying what the server sends, and applying it safely.
  The server owns everything that is decided centrally: which scopes a client
  has, which schema applies, how each mutation ended, what each cursor means
  and which scopes must rebuild. A client that overrides a server decision
  keeps data it may not have, or loses data it should have. A client that
  hands durable work to a JavaScript layer loses it when that layer goes away.
  The harness injects server decisions through the proxy, checks that the
  client follows them exactly, and checks that the client alone drives the
  order and retry of its requests.

  Background:
    Given a registered table "tasks" with columns:
      | column   | type   | key | nullable |
      | id       | string | yes | no       |
      | owner_id | string | no  | no       |
      | title    | string | no  | no       |
    And table "tasks" places each row in scope "user:{owner_id}"
    And client "A" of user "alice" has connected and rebuilt every assigned scope

  Rule: The native client owns local SQLite integration, durable queueing, scheduling, verification and safe apply

    Scenario: The client schedules push before pull and applies server data without echo
      Given client "W" has pushed an insert of task "t1" owned by "alice" with title "From elsewhere"
      And client "A" executes SQL:
        """
        INSERT INTO tasks (id, owner_id, title) VALUES ('t2', 'alice', 'Local first');
        """
      When client "A" syncs
      Then the proxy recorded from client "A", in order, a connect, a push, then a pull
      And client "A" has rows "t1" and "t2" of "tasks"
      And client "A" inspection shows no mutation for "t1"

    Scenario: The client retries a 503 on its own, not before Retry-After, with the same bytes
      Given client "A" executes SQL:
        """
        INSERT INTO tasks (id, owner_id, title) VALUES ('t3', 'alice', 'Retry me');
        """
      And the proxy answers the next push of client "A" with status 503, code "temporary_unavailable" and Retry-After "2"
      When client "A" is started and left running for 10 seconds without further calls
      Then the proxy recorded a second push of client "A" at least 2 seconds after the first
      And the second push is byte-identical to the first
      And client "A" state log contains "pushing", "backoff", "pushing" in that order

    @negative
    Scenario: The client verifies rows before applying them
      Given client "W" has pushed an insert of task "t4" owned by "alice" with title "Genuine"
      And the proxy replaces the "title" of "t4" in the next pull response to client "A" with "Forged" and keeps its "row_checksum"
      When client "A" syncs
      Then client "A" does not have row "t4" of "tasks" with "title" "Forged"
      And client "A" reports state "error" with a non-retryable failure of operation "pulling"

  Rule: The native client accepts server authority for assignment, schema, conflict outcomes, cursors and rebuild state

    @negative
    Scenario Outline: The client follows the server's <decision>
      Given the proxy rewrites the next <response> to client "A" so that <rewrite>
      When client "A" syncs
      And client "A" syncs
      Then <expectation>

      Examples:
        | decision             | response               | rewrite                                                                 | expectation                                                                                                  |
        | rebuild decision     | terminal pull response | "rebuild" lists "user:alice" and "scope_cursors" and "checksums" are adjusted to match | client "A" rebuilt "user:alice" from "cursor" null and its next pull presents that rebuild's "final_scope_cursor" |
        | cursor               | terminal pull response | the cursor issued for "user:alice" is aliased as "ic.opaque.é.0001" and mapped back when presented | the next pull of client "A" presents exactly "ic.opaque.é.0001" for "user:alice"                           |

    @negative @cap:scopes
    Scenario: The client drops a scope the server removed and never presents it again
      Given user "alice" is assigned scope "team:t_1"
      And client "A" has synced
      When the operator revokes scope "team:t_1" from user "alice"
      And client "A" syncs
      And client "A" syncs
      Then no pull of client "A" after the revocation names scope "team:t_1"
      And client "A" presented in each pull the "scope_set_version" of the previous response

    @negative
    Scenario: The client takes the server's conflict outcome and does not retry the rejected write
      Given client "W" has pushed an update of task "t5" owned by "alice" setting "title" to "Server wins"
      And client "A" had synced before that update and then executes SQL:
        """
        UPDATE tasks SET title = 'Client wants' WHERE id = 't5';
        """
      When client "A" syncs
      And client "A" syncs
      Then the push outcome of that update is "conflict" with code "version_conflict"
      And client "A" inspection shows the row version of "t5" equal to the "server_version" of the outcome
      And client "A" inspection shows the rejection with code "version_conflict"
      And the proxy recorded exactly one push carrying that mutation ID

    @negative @cap:schema
    Scenario: The client does not continue on a schema it was told is unsupported
      When the operator publishes a "class_4" manifest that removes column "title" from table "tasks"
      And client "A" syncs
      Then client "A" reports state "error" with failure operation "schema" and recovery action "schema_reset"
      And the proxy recorded no push, pull or rebuild of client "A" after that connect

  Rule: Durable semantics are never delegated to a JavaScript layer

    @negative @form:react-native-binding @cap:reactNative @cap:crash
    Scenario: The native client continues alone from state written through a React Native binding
      Given client "RN" is the React Native binding on "android" for user "carol"
      And client "RN" has connected and rebuilt every assigned scope
      And client "RN" executes SQL:
        """
        INSERT INTO tasks (id, owner_id, title) VALUES ('t6', 'carol', 'Native owns this');
        """
      When the harness kills client "RN"
      And the harness opens the same database with the native "android" client "N" directly, without JavaScript
      And client "N" syncs
      Then the push of client "N" carries the insert of "t6" with the mutation ID client "RN" inspected
      And the push outcome of that mutation is "applied"
