@SYNC-PROTO-009 @server
Feature: Scope Set Version Monotonicity
  scope_set_version is how a client knows whether the scope list it holds is
  the current one. That only works if each value names exactly one set for the
  client: the version moves up when the authoritative assigned set changes and
  at no other time, it never goes back, and a value once used is never given
  to a different set, not even when a later change happens to restore an
  earlier set. Cursor replacement, rebuilds, schema actions and unchanged
  requests leave it where it is.

  The harness walks a client through assignment changes made with the scopes
  capability and records, for every successful connect and pull, the version
  reported and the set that results from applying the delta. It then checks
  that the version sequence steps up by one exactly at each change of set,
  stays flat otherwise, and maps each value to a single set.

  Background:
    Given a registered table "tasks" with columns:
      | column   | type   | key |
      | id       | string | yes |
      | owner_id | string | no  |
      | title    | string | no  |
    And table "tasks" places each row in scope "user:{owner_id}"

  @cap:provision @cap:scopes
  Rule: scope_set_version advances strictly when the assigned scope set changes

    Scenario: a fresh client's first assignment is one step up from the empty set it declared
      When client "A" of user "alice" connects as a fresh client
      Then the response member "/scope_set_version" equals 1
      And the response member "/scopes/add" equals [{"id":"user:alice","cursor":null}]

    Scenario: each step of a scripted history moves the version exactly when the set moves
      Given client "A" of user "alice" has connected and rebuilt every assigned scope
      And the harness notes the scope_set_version of client "A" as V
      When the following assignment steps happen, each followed by a pull of client "A":
        | step | change                                         | set after the pull                     | version |
        | 1    | user "alice" is assigned scope "project:p1"    | project:p1, user:alice                 | V + 1   |
        | 2    | no change                                      | project:p1, user:alice                 | V + 1   |
        | 3    | scope "project:p1" is revoked from user "alice" | user:alice                            | V + 2   |
        | 4    | user "alice" is assigned scope "project:p1"    | project:p1, user:alice                 | V + 3   |
        | 5    | a registered shared scope "catalog_public"     | catalog_public, project:p1, user:alice | V + 4   |
        | 6    | the default scope of user "alice" is revoked   | catalog_public, project:p1             | V + 5   |
      Then every pull response had status 200
      And after each step the scope set of client "A" and the reported "/scope_set_version" are as listed

    Scenario: a second client of the same user keeps its own version history
      Given client "A" of user "alice" has connected and rebuilt every assigned scope
      And user "alice" is assigned scope "project:p1"
      And client "A" has pulled
      When client "B" of user "alice" connects as a fresh client
      And user "alice" is assigned scope "project:p2"
      And client "B" pulls
      Then the versions reported to client "B" rose by exactly one between its connect and its pull
      And the versions reported to client "A" never decreased

  @cap:provision @cap:scopes
  Rule: scope_set_version advances only when the assigned scope set changes

    @negative
    Scenario: a fresh client that is assigned nothing stays at version 0
      Given the default scope of user "alice" is revoked
      When client "A" of user "alice" connects as a fresh client
      Then the response member "/scope_set_version" equals 0
      And the response member "/scopes" equals {"add":[],"remove":[]}

    @negative
    Scenario: unchanged connects and pulls keep the stored version
      Given client "A" of user "alice" has connected and rebuilt every assigned scope
      And the harness notes the scope_set_version of client "A" as V
      When client "A" pulls
      And client "A" connects
      And client "A" pulls
      Then every one of these responses reported "/scope_set_version" equal to V
      And the connect response has "/scopes" equal to {"add":[],"remove":[]}

    @negative
    Scenario: a grant of a scope the user already has through another source does not move the version
      Given a registered shared scope "catalog_public"
      And client "A" of user "alice" has connected and rebuilt every assigned scope
      And the harness notes the scope_set_version of client "A" as V
      And user "alice" is assigned scope "catalog_public"
      When client "A" pulls
      Then the response member "/scope_set_version" equals V
      And the response member "/scope_updates" equals {"add":[],"remove":[]}

    @negative
    Scenario: a completed rebuild does not move the version
      Given client "A" of user "alice" has connected and rebuilt every assigned scope
      And the harness notes the scope_set_version of client "A" as V
      When client "A" requests a rebuild of scope "user:alice" and fetches every page
      And client "A" pulls presenting the final rebuild cursor for "user:alice"
      Then the response member "/scope_set_version" equals V

    @negative @cap:schema
    Scenario: cursor replacement on a schema change does not move the version
      Given client "A" of user "alice" has connected and rebuilt every assigned scope
      And the harness notes the scope_set_version of client "A" as V
      And the server publishes a class 2 manifest that adds a nullable column "note" of type "string" to table "tasks"
      When client "A" connects
      Then the response member "/schema/action" equals "replace"
      And the response member "/scope_cursor_updates" has a non-null entry for "user:alice"
      And the response member "/scope_set_version" equals V
      And the response member "/scopes" equals {"add":[],"remove":[]}

  @cap:provision @cap:scopes
  Rule: a version is never reused for a different set and never moves backward

    @property
    Scenario: for many generated assignment histories the version names one set and only rises
      Given client "A" of user "alice" has connected and rebuilt every assigned scope
      When the harness runs 25 generated histories of up to 8 steps, each step drawn from granting or revoking one of "project:p1" and "project:p2", revoking or restoring the default scope, or no change, with a pull of client "A" after each step and a fresh client "A" for each history
      Then in every history the reported version rose by exactly one after each step that changed the set and stayed equal after every other step
      And in every history no version value was reported with two different sets
      And in every history no reported version was lower than an earlier one

    @negative
    Scenario: restoring an earlier set gets a new version, not the old one
      Given client "A" of user "alice" has connected and rebuilt every assigned scope
      And the harness notes the scope_set_version of client "A" as V
      And user "alice" is assigned scope "project:p1"
      And client "A" has pulled
      And scope "project:p1" is revoked from user "alice"
      When client "A" pulls
      Then the response member "/scope_set_version" equals V + 2
      And the response member "/scope_updates/remove" equals ["project:p1"]
