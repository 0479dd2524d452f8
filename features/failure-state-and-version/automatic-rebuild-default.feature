@SYNC-STATE-003 @client
Feature: Automatic Rebuild Default
  Once the server says a scope must be rebuilt (a new scope, a stale cursor, a
  schema action, a restarted rebuild session) the client cannot make progress
  on that scope until it does. Out of the box the client therefore carries the
  rebuild out by itself, inside the ordinary sync cycle: it needs no approval
  callback, no extra API call and no scheduling by the application. A default
  client that parks the scope and waits for the application to step in would
  leave the user with missing data for as long as nobody does.

  The harness opens the client with its default configuration and acts as an
  application that only ever calls syncNow. For each way the server can
  require a rebuild it checks that the same syncNow call sends the rebuild
  requests, installs the final cursor after verifying the checksum, shows the
  rows, and returns "idle" within a bounded time, with no scope left
  rebuild-required.

  Background:
    Given a registered table "tasks" with columns:
      | column   | type   | key |
      | id       | string | yes |
      | owner_id | string | no  |
      | team     | string | no  |
      | title    | string | no  |
    And table "tasks" places each row in scope "team:{team}"
    And user "alice" is assigned scope "team:red"
    And the harness has committed and capture has materialized:
      """
      INSERT INTO public.tasks (id, owner_id, team, title) VALUES ('t-1', 'alice', 'red', 'red one'), ('t-2', 'bob', 'blue', 'blue one');
      """
    And client "A" of user "alice" is opened with the default configuration
    And client "A" has synced

  @cap:provision @cap:sourceSql
  Rule: under default configuration a server-required scope rebuild proceeds without application approval or orchestration

    Scenario Outline: a server-required rebuild completes inside one syncNow call
      Given <trigger>
      When client "A" syncs, with the application making no other call
      Then the sync of client "A" ends with completion "idle" within 30 seconds
      And client "A" sent at least one rebuild request for scope "<scope>" during that sync
      And client "A" reports scope "<scope>" as not requiring rebuild, with the final rebuild cursor installed
      And client "A" has row "<row>" in table "tasks"

      @cap:scopes
      Examples: a scope added by assignment
        | trigger                                     | scope     | row |
        | user "alice" is assigned scope "team:blue"  | team:blue | t-2 |

      @cap:schema
      Examples: a schema action that names affected scopes
        | trigger                                                                                                                   | scope    | row |
        | the server publishes a class 3 manifest that adds a column "rank" of type "int" with existing values to table "tasks", affecting scope "team:red" | team:red | t-1 |

      @cap:clients
      Examples: an expired client generation
        | trigger                         | scope    | row |
        | the server has expired client "A" | team:red | t-1 |

      Examples: a scope a pull answer lists for rebuild
        | trigger                                                            | scope    | row |
        | client "A" will be told by its next pull to rebuild scope "team:red" | team:red | t-1 |

    Scenario: a rebuild the server restarts mid-way is restarted by the client on its own
      Given the harness has committed and capture has materialized:
        """
        INSERT INTO public.tasks (id, owner_id, team, title) VALUES ('t-3', 'alice', 'red', 'red two'), ('t-4', 'alice', 'red', 'red three');
        """
      And client "A" uses rebuild page limit 1
      And client "A" will be told by its next pull to rebuild scope "team:red"
      And the proxy will answer the second rebuild request of client "A" with status 409 and the error body {"error":{"code":"rebuild_restart_required","message":"rebuild must restart","retryable":false,"scope_id":"team:red"}}
      When client "A" syncs, with the application making no other call
      Then the sync of client "A" ends with completion "idle" within 30 seconds
      And client "A" sent a rebuild request for scope "team:red" with "/cursor" null and a new "/rebuild_id" after the 409
      And client "A" has rows "t-1", "t-3" and "t-4" in table "tasks"

  @cap:provision @cap:sourceSql
  Rule: a default client never waits indefinitely for mediation

    @negative @cap:scopes
    Scenario: a rebuild-required scope is not parked for the application
      Given user "alice" is assigned scope "team:blue"
      When client "A" syncs, with the application making no other call
      And client "A" syncs, with the application making no other call
      Then after the first of these syncs client "A" already reported no scope requiring rebuild
      And client "A" never reported the state "rebuilding" for longer than 30 seconds
      And client "A" ended both syncs idle in state "ready" without entering "error" or "stopped"
