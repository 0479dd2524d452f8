@SYNC-SCHEMA-003 @server @client
Feature: Schema Cursor Continuity
  Publishing a new manifest changes the schema hash bound into every
  incremental cursor. Without a bridge, every scope of every client would have
  to rebuild, even scopes whose data the change does not touch. On a
  schema-changing connect the server therefore checks each cursor the client
  presents. If the lineage is known and compatible, the scope has no Class 3
  effect and every other binding is still current, it returns a new token
  under the current hash at the same position. Otherwise it returns null and
  the scope rebuilds. Pull never accepts the old token. The client installs the
  replacements together with the new manifest, never edits a token, and
  rebuilds only scopes that got null. The harness checks positions by the
  changes a token yields, reads the replacement map on the wire, and follows
  what the client presents afterwards.

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
    And user "alice" is assigned scope "team:t_1"
    And user "alice" is assigned scope "team:t_2"

  Rule: A schema-changing connect replaces each valid cursor of an unaffected scope with a current-schema token at the same position

    @cap:schema @cap:scopes
    Scenario: After a Class 2 publication every existing scope gets a replacement that resumes where the old cursor stood
      Given the harness client "H" of user "alice" has completed a sync while manifest version 1 was current
      And the harness has recorded the cursors of "H" as "old" for scopes "team:t_1", "team:t_2" and "user:alice"
      And the server table "tasks" gains rows "t7" and "t8" owned by "alice" after those cursors were issued
      When the operator publishes a "class_2" manifest that adds nullable column "note" of type "string" to table "tasks"
      And the harness client "H" connects presenting its installed schema and the "old" cursors
      Then the connect response has schema action "replace"
      And member "scope_cursor_updates" has a nonempty string for each of "team:t_1", "team:t_2" and "user:alice"
      And each replacement differs from the "old" cursor of its scope
      And member "scopes" is {"add":[],"remove":[]}
      When the harness client "H" pulls presenting schema version 2 and the replacement cursors
      Then the response status is 200
      And member "rebuild" is []
      And the changes are exactly the upserts of "t7" and "t8" in scope "user:alice"

    @cap:schema @cap:scopes
    Scenario: A Class 3 connect nulls the affected scope and replaces the others
      Given the harness client "H" of user "alice" has completed a sync while manifest version 1 was current
      When the operator publishes a "class_3" manifest that adds column "priority" of type "int" with historical values to table "notes", affecting scope "team:t_1"
      And the harness client "H" connects presenting its installed schema and its cursors
      Then the connect response has schema action "rebuild_local"
      And member "affected_scopes" is ["team:t_1"]
      And member "scope_cursor_updates" has null for "team:t_1" and a nonempty string for "team:t_2" and for "user:alice"

  Rule: A replacement needs a known compatible lineage, no Class 3 effect on the scope and current bindings; otherwise the entry is null

    @negative @cap:schema @cap:sourceSql
    Scenario Outline: A scope whose <binding> is no longer current gets null instead of a replacement
      Given the harness client "H" of user "alice" has completed a sync while manifest version 1 was current
      And the server table "notes" gains a row in team "t_1"
      And the harness has recorded the cursors of "H" as "old"
      And <staleness>
      When the operator publishes a "class_2" manifest that adds nullable column "note" of type "string" to table "tasks"
      And the harness client "H" connects presenting its installed schema and the "old" cursors
      Then member "scope_cursor_updates" has null for "team:t_1"
      And member "scope_cursor_updates" has a nonempty string for "team:t_2"

      @cap:provision
      Examples: membership
        | binding               | staleness                                                                        |
        | membership generation | the operator changes the membership rule of "notes" so that it mints a new membership generation for scope "team:t_1" |

      @cap:compaction
      Examples: retention
        | binding            | staleness                                                                                                                     |
        | retention position | the server table "notes" gains 3 rows in team "t_1", "H" pulls and then acknowledges the newer cursor, and the operator compacts scope "team:t_1" |
        | retention lineage  | the operator resets the retention lineage of scope "team:t_1"                                                                 |

    @negative @cap:schema
    Scenario: A cursor from an unknown lineage is never bridged
      Given the harness client "H" of user "alice" has completed a sync while manifest version 1 was current
      When the operator publishes a "class_4" manifest that removes column "body" from table "notes"
      And the harness client "H" connects presenting its installed schema and its cursors
      Then the connect response has schema action "unsupported"
      And member "scope_cursor_updates" has no nonempty string value

  Rule: Pull never accepts a cursor issued under an older schema

    @negative @cap:schema
    Scenario: The old token presented under the current schema sends its scope to rebuild
      Given the harness client "H" of user "alice" has completed a sync while manifest version 1 was current
      And the harness has recorded the cursors of "H" as "old"
      When the operator publishes a "class_2" manifest that adds nullable column "note" of type "string" to table "tasks"
      And the harness client "H" connects presenting its installed schema and the "old" cursors
      And the harness client "H" pulls presenting schema version 2, the replacement cursor for "team:t_2" and the "old" cursor for "user:alice"
      Then the response status is 200
      And member "rebuild" is ["user:alice"]
      And member "scope_cursors" has no entry for "user:alice"
      And scope "team:t_2" is served normally

    @negative @cap:schema
    Scenario: The affected scope's old cursor is not carried forward
      Given the harness client "H" of user "alice" has completed a sync while manifest version 1 was current
      And the harness has recorded the cursors of "H" as "old"
      When the operator publishes a "class_3" manifest that adds column "priority" of type "int" with historical values to table "notes", affecting scope "team:t_1"
      And the harness client "H" connects presenting its installed schema and the "old" cursors
      And the harness client "H" pulls presenting schema version 2 and the "old" cursor for "team:t_1"
      Then member "rebuild" is ["team:t_1"]
      And the response has no change for scope "team:t_1"

  Rule: The client installs replacement tokens only with the activated target manifest and never relabels a token

    @cap:schema @cap:scopes
    Scenario: The client keeps unaffected scopes incremental and presents the replacement bytes unchanged
      Given client "A" of user "alice" has completed a sync while manifest version 1 was current
      When the operator publishes a "class_2" manifest that adds nullable column "note" of type "string" to table "tasks"
      And client "A" syncs
      Then the proxy recorded no rebuild request from client "A"
      And the first pull of client "A" after the connect presents, for every scope, exactly the string the connect returned in "scope_cursor_updates"
      And client "A" inspection shows manifest version 2 and the replacement cursors

    @cap:schema @cap:scopes
    Scenario: A scope given null is rebuilt, and its old token is never presented again
      Given client "A" of user "alice" has completed a sync while manifest version 1 was current
      And the harness has recorded the cursor client "A" holds for "team:t_1" as "old_t1"
      When the operator publishes a "class_3" manifest that adds column "priority" of type "int" with historical values to table "notes", affecting scope "team:t_1"
      And client "A" syncs
      Then the proxy recorded a rebuild of scope "team:t_1" from client "A" starting with "cursor" null
      And no request of client "A" after the connect carries the cursor "old_t1"

    @cap:schema @cap:crash
    Scenario: A crash before manifest activation leaves the old manifest with the old cursors
      Given client "A" of user "alice" has completed a sync while manifest version 1 was current
      And the harness has recorded the cursors client "A" inspects as "old"
      And client "A" is armed to crash at "migration_prepared"
      When the operator publishes a "class_2" manifest that adds nullable column "note" of type "string" to table "tasks"
      And client "A" syncs
      Then client "A" has crashed
      When the harness restarts client "A" with the network blocked
      Then client "A" inspection shows either manifest version 1 with the "old" cursors or manifest version 2 with the replacement cursors, never a mix
      And the proxy recorded no request from client "A" since the restart

    @negative @cap:schema
    Scenario: A target manifest that fails verification installs neither the manifest nor the replacements
      Given client "A" of user "alice" has completed a sync while manifest version 1 was current
      And the harness has recorded the cursors client "A" inspects as "old"
      And the operator publishes a "class_2" manifest that adds nullable column "note" of type "string" to table "tasks"
      And the proxy rewrites the next connect response for client "A" by changing the "name" of column "title" in "schema_definition" while keeping "schema.hash"
      When client "A" syncs
      Then client "A" reports state "error" with a non-retryable failure of operation "schema"
      And client "A" inspection shows manifest version 1 with the "old" cursors
