@SYNC-PROTO-010 @server @client
Feature: Schema Authority
  Whether a client's installed schema can keep syncing is decided once, by the
  server, from the stored immutable lineage of manifests: the connect response
  names one action (none, replace, rebuild_local or unsupported) and the
  client carries it out as given. A client that second-guesses the server,
  rebuilds scopes it was not told to, keeps syncing after unsupported, or
  falls back to the fresh sentinel to get a clean start would let two copies
  of the truth drift apart. The fresh sentinel {"version":0,"hash":""} exists
  only for an identity the server has never seen with a generation or an
  installed schema; a continuing client leaves unsupported only through the
  explicit schema_reset request.

  The harness publishes manifests of each class through the schema capability
  (two tables: "tasks" in each user's scope, "templates" in the scope
  "catalog_public", which only alice is granted), connects with chosen schema
  references, checks the action and its members, and watches a client under
  test carry out each action through its request log and inspection output.

  Background:
    Given a registered table "tasks" with columns:
      | column   | type   | key |
      | id       | string | yes |
      | owner_id | string | no  |
      | title    | string | no  |
    And table "tasks" places each row in scope "user:{owner_id}"
    And a registered table "templates" with columns:
      | column | type   | key |
      | id     | string | yes |
      | name   | string | no  |
    And table "templates" places each row in scope "catalog_public"
    And user "alice" is assigned scope "catalog_public"
    And the harness notes the current manifest as S1

  @cap:provision @cap:schema
  Rule: the server selects the action from the immutable schema lineage

    Scenario: the exact current reference needs no action
      Given client "A" of user "alice" has connected and rebuilt every assigned scope
      When client "A" connects
      Then the response member "/schema" has the "version" and "hash" of manifest S1 and "action" equal to "none"
      And the response has no member "/schema_definition" and no member "/affected_scopes"

    Scenario: a compatible class 2 history is answered with replace and the inline manifest
      Given client "A" of user "alice" has connected and rebuilt every assigned scope
      And the server publishes a class 2 manifest that adds a nullable column "note" of type "string" to table "tasks"
      And the harness notes the current manifest as S2
      When client "A" connects
      Then the response member "/schema/action" equals "replace"
      And the response member "/schema_definition" is the manifest S2, whose recomputed schema hash equals S2.hash
      And the response has no member "/affected_scopes"

    Scenario Outline: a class 3 history rebuilds only the assigned scopes it affects
      Given client "A" of user "<user>" has connected and rebuilt every assigned scope
      And the server publishes a class 3 manifest that adds a column "rank" of type "int" with existing values to table "templates", affecting scope "catalog_public"
      When client "A" connects
      Then the response member "/schema/action" equals "<action>"
      And the response member "/affected_scopes" is <affected>
      And the response member "/scope_cursor_updates" maps "catalog_public" to null when it is affected and every unaffected scope to a non-null cursor

      Examples:
        | user  | action        | affected                    |
        | alice | rebuild_local | equal to ["catalog_public"] |
        | carol | replace       | absent                      |

    Scenario Outline: an incompatible or unknown lineage is answered with unsupported and no manifest
      Given client "A" of user "alice" has connected and rebuilt every assigned scope
      And <history>
      When client "A" connects presenting <reference>
      Then the response status is 200
      And the response member "/schema/action" equals "unsupported"
      And the response member "/schema/reason" equals "<reason>"
      And the response has no member "/schema_definition" and no member "/affected_scopes"

      Examples:
        | history                                                                                 | reference                                                                                         | reason                         |
        | the server publishes a class 4 manifest that removes column "title" from table "tasks" | its installed schema reference                                                                    | incompatible_schema_transition |
        | nothing else changes                                                                    | the schema reference {"version":9,"hash":"abababababababababababababababababababababababababababababababab"} | unknown_schema_lineage         |

    Scenario: an explicit reset by a continuing client rebuilds every assigned scope
      Given client "A" of user "alice" has connected and rebuilt every assigned scope
      And the server publishes a class 4 manifest that removes column "title" from table "tasks"
      When client "A" connects with "schema_reset" true, its client_generation and its installed schema reference
      Then the response member "/schema/action" equals "rebuild_local"
      And the response member "/affected_scopes" equals ["catalog_public","user:alice"]
      And the response member "/scope_cursor_updates" maps "catalog_public" and "user:alice" to null

    Scenario: an explicit reset by a continuing client with no assigned scope is answered with replace
      Given the default scope of user "dave" is revoked
      And client "A" of user "dave" has connected and rebuilt every assigned scope
      And the server publishes a class 4 manifest that removes column "title" from table "tasks"
      When client "A" connects with "schema_reset" true, its client_generation and its installed schema reference
      Then the response member "/schema/action" equals "replace"
      And the response has a member "/schema_definition" and no member "/affected_scopes"

    Scenario: no connect response ever carries the action fetch
      Given client "A" of user "alice" has connected and rebuilt every assigned scope
      And client "A" connects
      And the server publishes a class 3 manifest that adds a column "rank" of type "int" with existing values to table "templates", affecting scope "catalog_public"
      And client "A" connects
      And the server publishes a class 4 manifest that removes column "title" from table "tasks"
      When client "A" connects presenting its installed schema reference
      Then across every connect response recorded in this scenario, "/schema/action" is one of "none", "replace", "rebuild_local" and "unsupported"

  @cap:provision @cap:schema
  Rule: a client executes the server's action without substituting a local compatibility decision

    Scenario: replace installs the inline manifest and rebuilds nothing whose cursor was carried over
      Given client "A" of user "alice" has synced
      And the server publishes a class 2 manifest that adds a nullable column "note" of type "string" to table "tasks"
      When client "A" syncs
      Then client "A" reports the current manifest as its installed schema
      And client "A" sent no rebuild request during that sync
      And client "A" sent no request to "/sync/schema" or "/sync/tables"

    Scenario: rebuild_local rebuilds exactly the affected scopes
      Given client "A" of user "alice" has synced
      And the server publishes a class 3 manifest that adds a column "rank" of type "int" with existing values to table "templates", affecting scope "catalog_public"
      When client "A" syncs
      Then the scopes client "A" sent rebuild requests for during that sync are exactly "catalog_public"
      And client "A" reports the current manifest as its installed schema

    @negative
    Scenario: unsupported stops normal sync until an explicit reset
      Given client "A" of user "alice" has synced
      And client "A" executes SQL:
        """
        INSERT INTO tasks (id, owner_id, title) VALUES ('t-1', 'alice', 'pending across the upgrade');
        """
      And the server publishes a class 4 manifest that removes column "title" from table "tasks"
      When client "A" syncs
      And client "A" syncs
      Then each of those syncs ends with completion "error"
      And client "A" has stopped in state "error" naming the recovery action "schema_reset"
      And client "A" sent no push, pull or rebuild request after the connect that answered unsupported
      And client "A" still holds the mutation for row "t-1" and it is inspectable

    Scenario: the explicit reset sends schema_reset with the installed reference, never the sentinel
      Given client "A" of user "alice" has synced
      And the server publishes a class 4 manifest that removes column "title" from table "tasks"
      And client "A" has synced and is in state "error"
      When the application asks client "A" to reset its schema and start
      Then the next connect request of client "A" has "/schema_reset" true, its client_generation and the schema reference it had installed
      And the response member "/schema/action" equals "rebuild_local"
      And client "A" rebuilds scopes "catalog_public" and "user:alice" and ends with completion "idle"

  @cap:provision
  Rule: the fresh sentinel is accepted only for an identity with no prior generation or installed schema

    Scenario: a never-seen identity is served with replace and a first generation
      When the harness sends a raw connect request as user "alice":
        """
        {"client_id":"fresh-device-01","platform":"test","app_version":"1.0.0","protocol_version":3,"schema":{"version":0,"hash":""},"scope_set_version":0,"known_scopes":{}}
        """
      Then the response status is 200
      And the response member "/schema/action" equals "replace"
      And the response has a member "/schema_definition"
      And the response member "/client_generation" is an integer in 1..9007199254740991

    @negative
    Scenario Outline: the sentinel is refused when it is misused or malformed
      Given the harness has connected client "known-device" of user "alice" with the fresh sentinel
      When the harness sends a raw connect request as user "alice":
        """
        <body>
        """
      Then the response status is 400 with error code "invalid_schema_reference"
      And the error member "received_schema" equals <received>

      Examples:
        | body                                                                                                                                                                                      | received                  |
        | {"client_id":"known-device","platform":"test","app_version":"1.0.0","protocol_version":3,"schema":{"version":0,"hash":""},"scope_set_version":0,"known_scopes":{}}                      | {"version":0,"hash":""}   |
        | {"client_id":"other-device","client_generation":1,"platform":"test","app_version":"1.0.0","protocol_version":3,"schema":{"version":0,"hash":""},"scope_set_version":0,"known_scopes":{}} | {"version":0,"hash":""}   |
        | {"client_id":"other-device","platform":"test","app_version":"1.0.0","protocol_version":3,"schema_reset":true,"schema":{"version":0,"hash":""},"scope_set_version":0,"known_scopes":{}}   | {"version":0,"hash":""}   |
        | {"client_id":"other-device","platform":"test","app_version":"1.0.0","protocol_version":3,"schema":{"version":0,"hash":"x"},"scope_set_version":0,"known_scopes":{}}                     | {"version":0,"hash":"x"}  |
        | {"client_id":"other-device","platform":"test","app_version":"1.0.0","protocol_version":3,"schema":{"version":5,"hash":""},"scope_set_version":0,"known_scopes":{}}                      | {"version":5,"hash":""}   |

    @negative @cap:schema
    Scenario: a continuing client cannot escape unsupported with the sentinel
      Given client "A" of user "alice" has connected and rebuilt every assigned scope
      And the server publishes a class 4 manifest that removes column "title" from table "tasks"
      And client "A" has connected and was answered "unsupported"
      When client "A" sends its next connect request without "client_generation" and with "/schema" set to {"version":0,"hash":""}, "/scope_set_version" set to 0 and "/known_scopes" set to {}
      Then the response status is 400 with error code "invalid_schema_reference"
      And the response has no member "/schema_definition"
      When client "A" connects presenting its installed schema reference
      Then the response member "/schema/action" equals "unsupported"
