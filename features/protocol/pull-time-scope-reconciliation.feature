@SYNC-PROTO-006 @server
Feature: Pull-Time Scope Reconciliation
  A grant, a revoke or a data change behind the assignment function should
  reach a client at its next successful request, without waiting for a
  reconnect. So connect and pull both evaluate the assigned scope set with the
  same rule, and pull does it at a fixed point: after every request check has
  passed and before scope_updates is built. A changed set is reported in that
  very response and moves scope_set_version up by exactly one; an unchanged
  set, a pull that fails and any rebuild write no assignment state at all.

  The harness changes assignment through the scopes capability between
  requests and reads the result on the wire: what scope_updates and
  scope_set_version say in the next successful pull, what a second client of
  the same user receives on connect, and that failed pulls and rebuilds in
  between leave no trace (the next successful pull still reports the change
  once, one step up).

  Background:
    Given a registered table "tasks" with columns:
      | column   | type   | key |
      | id       | string | yes |
      | owner_id | string | no  |
      | title    | string | no  |
    And table "tasks" places each row in scope "user:{owner_id}"
    And client "A" of user "alice" has connected and rebuilt every assigned scope
    And the harness notes the scope_set_version of client "A" as V

  @cap:provision @cap:scopes
  Rule: connect and pull compute the authoritative scope set with the same rule

    Scenario: a pull and a fresh connect after the same changes agree on the set
      Given a registered shared scope "catalog_public"
      And user "alice" is assigned scope "project:p1"
      And the registered assignment function returns for user "alice":
        | scope    |
        | team:t_7 |
      When client "A" pulls
      And client "B" of user "alice" connects as a fresh client
      Then the scopes client "A" holds after applying the pull's scope_updates equal the scopes the connect of client "B" added
      And both sets are exactly "catalog_public", "project:p1", "team:t_7" and "user:alice"

  @cap:provision @cap:scopes
  Rule: pull reconciles only after every request check passed and before it builds scope_updates

    @negative
    Scenario Outline: a pull that fails a check reconciles nothing and the next good pull reports the change once
      Given user "alice" is assigned scope "project:p1"
      When <failing pull>
      Then the response status is <status> with error code "<code>"
      And the response has no member "/scope_updates" and no member "/scope_set_version"
      When client "A" pulls
      Then the response status is 200
      And the response member "/scope_set_version" equals V + 1
      And the response member "/scope_updates/add" equals [{"id":"project:p1","cursor":null}]

      Examples:
        | failing pull                                                                           | status | code                      |
        | client "A" sends its next pull request with "/limit" set to 0                           | 400    | invalid_request           |
        | client "A" sends its next pull request with "/scope_set_version" set to V + 1           | 400    | invalid_request           |
        | client "A" sends its next pull request with "/scopes/project:p9" set to {"cursor":null} | 400    | invalid_request           |
        | client "A" pulls presenting its cursor for "user:alice" with its last character removed | 400    | invalid_request           |

    @negative @cap:schema
    Scenario: a pull refused for a stale schema reconciles nothing
      Given user "alice" is assigned scope "project:p1"
      And the server publishes a class 2 manifest that adds a nullable column "note" of type "string" to table "tasks"
      When client "A" pulls
      Then the response status is 422 with error code "schema_mismatch"
      When client "A" connects
      Then the response member "/scope_set_version" equals V + 1
      And the response member "/scopes/add" equals [{"id":"project:p1","cursor":null}]

  @cap:provision @cap:scopes
  Rule: a changed set advances scope_set_version by exactly one and appears in scope_updates of that response

    Scenario Outline: one pull reports a change of the set with one step
      Given <change>
      When client "A" pulls
      Then the response status is 200
      And the response member "/scope_set_version" equals V + 1
      And the response member "/scope_updates/add" equals <add>
      And the response member "/scope_updates/remove" equals <remove>
      And every scope in "/scope_updates/add" is listed in "/rebuild"
      And when "/has_more" is false the keys of "/checksums" include every added scope and no removed scope

      Examples:
        | change                                                                                   | add                                                                   | remove           |
        | user "alice" is assigned scope "project:p1"                                              | [{"id":"project:p1","cursor":null}]                                   | []               |
        | user "alice" is assigned scopes "project:p1" and "project:p2" in one operator transaction | [{"id":"project:p1","cursor":null},{"id":"project:p2","cursor":null}] | []               |
        | the default scope of user "alice" is revoked                                             | []                                                                    | ["user:alice"]   |
        | a registered shared scope "catalog_public"                                               | [{"id":"catalog_public","cursor":null}]                               | []               |

    @cap:sourceSql
    Scenario: an assignment function whose data changed is reflected in the next pull
      Given the registered assignment function reads table "public.team_members"
      And the harness commits on the source database:
        """
        INSERT INTO public.team_members (user_id, team_id) VALUES ('alice', 't_7');
        """
      When client "A" pulls
      Then the response member "/scope_set_version" equals V + 1
      And the response member "/scope_updates/add" equals [{"id":"team:t_7","cursor":null}]

    @negative
    Scenario: an add and a remove between two pulls are one step, not two
      Given user "alice" is assigned scope "project:p1"
      And client "A" has pulled and rebuilt every assigned scope
      And scope "project:p1" is revoked from user "alice"
      And user "alice" is assigned scope "project:p2"
      When client "A" pulls
      Then the response member "/scope_set_version" equals V + 2
      And the response member "/scope_updates/add" equals [{"id":"project:p2","cursor":null}]
      And the response member "/scope_updates/remove" equals ["project:p1"]

  @cap:provision @cap:scopes
  Rule: an unchanged set writes no assignment state

    Scenario: repeated pulls with no assignment change keep the version and report nothing
      When client "A" pulls
      And client "A" pulls
      Then both responses have "/scope_set_version" equal to V
      And both responses have "/scope_updates" equal to {"add":[],"remove":[]}

    @cap:inspect
    Scenario: an unchanged pull leaves the stored assignment untouched
      Given server inspection records the assignment state of client "A"
      When client "A" pulls
      Then server inspection shows the assignment state of client "A" unchanged, including its history and its write timestamps

  @cap:provision @cap:scopes
  Rule: a failed pull writes no assignment state

    @negative @cap:inspect
    Scenario: a refused pull leaves the stored assignment exactly as it was
      Given user "alice" is assigned scope "project:p1"
      And server inspection records the assignment state of client "A"
      When client "A" sends its next pull request with "/limit" set to 1001
      Then the response status is 400 with error code "invalid_request"
      And server inspection shows the assignment state of client "A" unchanged, including its history and its write timestamps

  @cap:provision @cap:scopes
  Rule: rebuild does not reconcile assignment

    @negative
    Scenario: a grant made before a rebuild is reported by the next pull, not consumed by the rebuild
      Given user "alice" is assigned scope "project:p1"
      When client "A" requests a rebuild of scope "user:alice" and fetches every page
      Then every rebuild response has status 200
      When client "A" pulls
      Then the response member "/scope_set_version" equals V + 1
      And the response member "/scope_updates/add" equals [{"id":"project:p1","cursor":null}]

    @negative
    Scenario: a revoke made before a rebuild of another scope is reported by the next pull
      Given user "alice" is assigned scope "project:p1"
      And client "A" has pulled and rebuilt every assigned scope
      And the harness notes the scope_set_version of client "A" as W
      And scope "project:p1" is revoked from user "alice"
      When client "A" requests a rebuild of scope "user:alice" and fetches every page
      And client "A" pulls
      Then the response member "/scope_set_version" equals W + 1
      And the response member "/scope_updates/remove" equals ["project:p1"]
