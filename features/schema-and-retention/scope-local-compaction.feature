@SYNC-SCHEMA-006 @server
Feature: Scope Local Compaction
  Compaction may delete only history that no live client of that scope still
  needs. For each scope, the safe position is the lowest position acknowledged
  by the nonexpired clients assigned to it. When no such client exists, it is
  the scope's durable high-watermark. An active rebuild pins history until it
  completes. Deleting effects and raising the floor happen in one commit. A
  global minimum, a checkpoint taken from another scope, a floor inferred from
  what is left in the log, or a half-done compaction would all either strand
  a live client or keep history forever. The harness arranges acknowledgements
  per client and scope, compacts, and checks the result on the wire: which
  cursors still resume and which must rebuild. Where it helps, it also reads
  the floor and the retained effects through server inspection.

  Background:
    Given a registered table "notes" with columns:
      | column  | type   | nullable | key |
      | id      | string | false    | yes |
      | team_id | string | false    | no  |
      | body    | string | false    | no  |
    And table "notes" places each row in scope "team:{team_id}"
    And user "xavier" is assigned scope "team:a"
    And user "yvonne" is assigned scope "team:b"
    And the harness client "X" of user "xavier" has completed a sync
    And the harness client "Y" of user "yvonne" has completed a sync
    And the server table "notes" gains rows "a1" to "a12" in team "a" and rows "b1" to "b12" in team "b", one committed transaction each
    And the harness client "X" has pulled scope "team:a" from its synced cursor with limits 1 to 12, recording the cursor after each change as "xa1" to "xa12"
    And the harness client "Y" has pulled scope "team:b" from its synced cursor with limits 1 to 12, recording the cursor after each change as "yb1" to "yb12"

  Rule: The safe position is the minimum acknowledged position among the nonexpired clients assigned to the scope

    @cap:compaction @cap:scopes
    Scenario: Each scope is compacted to its own clients' acknowledgements
      Given the harness client "X" has pulled presenting cursor "xa10" for scope "team:a"
      And the harness client "Y" has pulled presenting cursor "yb3" for scope "team:b"
      When the operator compacts every scope
      Then a pull by "X" presenting "xa9" lists "team:a" in "rebuild"
      And a pull by "X" presenting "xa10" is served incrementally with exactly the upserts of "a11" and "a12"
      And a pull by "Y" presenting "yb3" is served incrementally with exactly the upserts of "b4" to "b12"

    @negative @cap:compaction @cap:scopes
    Scenario: A slower client of the same scope holds the floor for everyone
      Given user "zoe" is assigned scope "team:a"
      And the harness client "Z" of user "zoe" has completed a sync
      And the harness client "X" has pulled presenting cursor "xa2" for scope "team:a"
      When the operator compacts every scope
      Then a pull by "X" presenting "xa2" is served incrementally with exactly the upserts of "a3" to "a12"

    @negative @cap:compaction @cap:clock @cap:clients @cap:scopes @cap:inspect
    Scenario: An expired client no longer holds the floor
      Given the harness client "X" has pulled presenting cursor "xa2" for scope "team:a"
      And user "zoe" is assigned scope "team:a"
      And the server clock advances by 31 days
      And the harness client "Z" of user "zoe" has completed a sync
      When the operator compacts every scope
      Then the harness client "X" is expired
      And server inspection shows no effect left for scope "team:a"

    @cap:compaction @cap:inspect
    Scenario: A scope with no assigned nonexpired client is compacted to its high-watermark
      Given the server table "notes" gains rows "c1" to "c3" in team "c"
      And no client is assigned scope "team:c"
      When the operator compacts every scope
      Then server inspection shows the resume floor of "team:c" equal to its durable high-watermark
      And server inspection shows no effect left for scope "team:c"

  Rule: An active rebuild pins the history its final cursor needs

    @cap:compaction @cap:scopes
    Scenario: Compaction during a rebuild keeps the rebuild's final cursor resumable
      Given the harness client "X" has pulled presenting cursor "xa12" for scope "team:a"
      And the harness client "X" has requested page 1 of a rebuild of "team:a" with limit 5 and rebuild ID "7d0c9b52-2f8f-4e44-9a51-0c1c3a9b6e01"
      And the server table "notes" gains rows "a13" and "a14" in team "a"
      And the harness client "X" has pulled presenting cursor "xa12" for scope "team:a" and then pulled presenting the returned cursor, which stands after "a14"
      When the operator compacts every scope
      And the harness client "X" requests the remaining rebuild pages of "team:a"
      And the harness client "X" pulls presenting the "final_scope_cursor" for "team:a"
      Then the response status is 200
      And member "rebuild" is []
      And the changes are exactly the upserts of "a13" and "a14"

  Rule: Effect deletion and the monotonic floor advance commit together or not at all

    @negative @cap:compaction @cap:inspect
    Scenario: A failing floor update rolls back the effect deletion
      Given the harness client "X" has pulled presenting cursor "xa10" for scope "team:a"
      And the harness has recorded the retained effects and the resume floor of "team:a" through server inspection
      And the operator arms a fault that makes the floor update of "team:a" fail
      When the operator attempts to compact scope "team:a"
      Then the compaction reports a failure
      And server inspection shows the same retained effects and the same resume floor for "team:a" as recorded
      And a pull by "X" presenting "xa5" is served incrementally with exactly the upserts of "a6" to "a12"

    @negative @cap:compaction
    Scenario: Presenting an older valid cursor never moves the acknowledgement, so the floor never goes back
      Given the harness client "X" has pulled presenting cursor "xa5" for scope "team:a"
      And the operator compacts every scope
      And the harness client "X" has pulled presenting cursor "xa10" for scope "team:a"
      When the harness client "X" pulls presenting cursor "xa6" for scope "team:a"
      Then member "rebuild" is [] and the changes are exactly the upserts of "a7" to "a12"
      When the operator compacts every scope
      And the harness client "X" pulls presenting cursor "xa8" for scope "team:a"
      Then member "rebuild" is ["team:a"]
