@SYNC-SCHEMA-004 @server
Feature: Durable Scope Retention Floor
  Compaction deletes old effects, so a cursor can only resume if the history
  after it still exists. Each scope therefore keeps a durable, inclusive resume
  floor and a retention lineage. A cursor below the floor must rebuild. A
  cursor at or above a floor that moved by ordinary compaction stays usable.
  Both stay recorded when a scope has no effects left, because an empty log
  cannot tell a caught-up cursor from one whose history was deleted. The
  harness collects cursors at known positions by pulling one change per page,
  acknowledges one of them, compacts, and then presents cursors below, at and
  above the floor.

  Background:
    Given a registered table "tasks" with columns:
      | column   | type   | nullable | key |
      | id       | string | false    | yes |
      | owner_id | string | false    | no  |
      | title    | string | false    | no  |
    And table "tasks" places each row in scope "user:{owner_id}"
    And a registered table "notes" with columns:
      | column  | type   | nullable | key |
      | id      | string | false    | yes |
      | team_id | string | false    | no  |
      | body    | string | false    | no  |
    And table "notes" places each row in scope "team:{team_id}"
    And the harness client "H" of user "alice" has completed a sync
    And the server table "tasks" gains rows "t1" to "t5" owned by "alice", one committed transaction each
    And the harness client "H" has pulled scope "user:alice" from its synced cursor with limits 1 to 5, recording the cursor after each change as "c1" to "c5"

  Rule: A cursor below the floor must rebuild

    @cap:compaction
    Scenario Outline: A cursor <relation> the floor gets <outcome>
      Given the harness client "H" has pulled presenting cursor "c3" for scope "user:alice"
      And the operator compacts scope "user:alice"
      When the harness client "H" pulls presenting cursor "<cursor>" for scope "user:alice"
      Then the response status is 200
      And <outcome>

      Examples:
        | relation | cursor | outcome                                                                                   |
        | below    | c1     | member "rebuild" is ["user:alice"] and member "scope_cursors" has no entry for "user:alice" |
        | below    | c2     | member "rebuild" is ["user:alice"] and member "scope_cursors" has no entry for "user:alice" |
        | at       | c3     | member "rebuild" is [] and the changes are exactly the upserts of "t4" and "t5"           |
        | above    | c4     | member "rebuild" is [] and the changes are exactly the upsert of "t5"                     |

    @negative @cap:compaction @cap:scopes
    Scenario: A stale cursor in one scope does not hold back the other scopes
      Given user "alice" is assigned scope "team:t_1"
      And the harness client "H" has completed a sync
      And the harness client "H" has pulled presenting cursor "c3" for scope "user:alice"
      And the server table "notes" gains row "n1" in team "t_1"
      And the operator compacts scope "user:alice"
      When the harness client "H" pulls presenting cursor "c1" for scope "user:alice" and its current cursor for "team:t_1"
      Then member "rebuild" is ["user:alice"]
      And the changes are exactly the upsert of "n1" in scope "team:t_1"
      And member "scope_cursors" has an entry for "team:t_1"

  Rule: The floor and the lineage stay durable when no effect remains, and an empty log proves nothing

    @negative @cap:compaction
    Scenario: A cursor below the floor of a fully compacted scope rebuilds instead of getting an empty success
      Given the harness client "H" has pulled presenting cursor "c5" for scope "user:alice"
      And the operator compacts scope "user:alice"
      And server inspection shows no effect left for scope "user:alice"
      When the harness client "H" pulls presenting cursor "c2" for scope "user:alice"
      Then member "rebuild" is ["user:alice"]
      And member "changes" is []
      And member "scope_cursors" has no entry for "user:alice"

    @cap:compaction @cap:capture
    Scenario: The floor survives a restart of the capture worker
      Given the harness client "H" has pulled presenting cursor "c4" for scope "user:alice"
      And the operator compacts scope "user:alice"
      When the capture worker is restarted
      And the harness client "H" pulls presenting cursor "c3" for scope "user:alice"
      Then member "rebuild" is ["user:alice"]

  Rule: A cursor at or above an ordinarily advanced floor stays eligible when its other bindings are valid

    @cap:compaction
    Scenario: Repeated ordinary compaction keeps the retention lineage and the cursor at the floor usable
      Given the harness client "H" has pulled presenting cursor "c2" for scope "user:alice"
      And the operator compacts scope "user:alice"
      And the harness client "H" has pulled presenting cursor "c3" for scope "user:alice"
      When the operator compacts scope "user:alice"
      And the harness client "H" pulls presenting cursor "c3" for scope "user:alice"
      Then member "rebuild" is []
      And the changes are exactly the upserts of "t4" and "t5"

    @negative @cap:compaction
    Scenario: A lineage reset makes cursors above the old floor stale
      Given the harness client "H" has pulled presenting cursor "c3" for scope "user:alice"
      When the operator resets the retention lineage of scope "user:alice"
      And the harness client "H" pulls presenting cursor "c4" for scope "user:alice"
      Then member "rebuild" is ["user:alice"]
