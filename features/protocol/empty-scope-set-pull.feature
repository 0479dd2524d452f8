@SYNC-PROTO-007 @client
Feature: Empty Scope Set Pull
  Pull is where the server reconciles assignment, so it is also the only way a
  client that knows no scope can learn that it now has one. A client that
  skips pull because its local scope list is empty would wait for a reconnect
  that may never come, and the user would see nothing. Every normal sync cycle
  therefore sends a pull, with "scopes": {} when no scope is known, and a
  scope that the response adds is rebuilt and its rows made visible within the
  same cycle.

  The harness starts clients whose user has no assigned scope, changes
  assignment while the client's cycle is in progress (the proxy holds the
  connect response until the grant has been made), and reads the client's
  request log and local tables after the cycle returns.

  Background:
    Given a registered table "tasks" with columns:
      | column   | type   | key |
      | id       | string | yes |
      | owner_id | string | no  |
      | title    | string | no  |
    And table "tasks" places each row in scope "team:{owner_id}"
    And the default scope of user "alice" is revoked

  @cap:provision @cap:scopes
  Rule: a client sends pull in every normal sync cycle, with an empty scopes map when it knows no scope

    Scenario: a fresh client that is assigned nothing still pulls
      When client "A" of user "alice" syncs for the first time
      Then the endpoints client "A" called during that sync, with consecutive repeats collapsed, were in order:
        | endpoint |
        | connect  |
        | pull     |
      And the pull request client "A" sent has "/scopes" equal to {}
      And the pull response has "/has_more" false and "/checksums" equal to {}
      And the sync of client "A" ends with completion "idle"

    @negative
    Scenario: each later cycle pulls again although the scope set is still empty
      Given client "A" of user "alice" has synced
      When client "A" syncs
      And client "A" syncs
      Then each of the last two syncs of client "A" sent exactly one pull request with "/scopes" equal to {}

  @cap:provision @cap:scopes @cap:sourceSql
  Rule: the client applies each added scope, rebuilds it and materializes its rows in the same cycle

    Scenario: a scope granted while the cycle runs arrives through the empty pull and is rebuilt at once
      Given the harness has committed and capture has materialized:
        """
        INSERT INTO public.tasks (id, owner_id, title) VALUES ('t-1', 't_7', 'first team task'), ('t-2', 't_7', 'second team task');
        """
      And the proxy will hold the next connect response to client "A"
      When client "A" of user "alice" starts syncing for the first time
      And the proxy has received the connect response for client "A"
      And user "alice" is assigned scope "team:t_7"
      And the proxy releases the held response
      And the sync of client "A" finishes
      Then the endpoints client "A" called during that sync, with consecutive repeats collapsed, were in order:
        | endpoint |
        | connect  |
        | pull     |
        | rebuild  |
        | pull     |
      And the first pull request of that sync has "/scopes" equal to {}
      And the first pull response of that sync has "/scope_updates/add" equal to [{"id":"team:t_7","cursor":null}]
      And querying "SELECT id, title FROM tasks ORDER BY id" on client "A" returns:
        | id  | title             |
        | t-1 | first team task   |
        | t-2 | second team task  |
      And client "A" reports scope "team:t_7" as not requiring rebuild, with the final rebuild cursor installed
      And the sync of client "A" ends with completion "idle"

    @negative
    Scenario: a continuing client with no scope receives a grant in its next cycle
      Given client "A" of user "alice" has synced
      And the harness has committed and capture has materialized:
        """
        INSERT INTO public.tasks (id, owner_id, title) VALUES ('t-3', 't_8', 'shared later');
        """
      And user "alice" is assigned scope "team:t_8"
      When client "A" syncs
      Then the first pull request of that sync has "/scopes" equal to {}
      And the requests client "A" sent during that sync include a rebuild request for scope "team:t_8" after that pull
      And querying "SELECT id, title FROM tasks ORDER BY id" on client "A" returns:
        | id  | title        |
        | t-3 | shared later |
      And client "A" reports no scope that still requires rebuild
      And the sync of client "A" ends with completion "idle"
