@SYNC-SCHEMA-002 @server @client
Feature: Deterministic Schema Class Dispatch
  Schema changes reach clients only through connect. The server looks at the
  manifest reference the client has installed, walks the known lineage to the
  current manifest, and picks exactly one action for that client: "none",
  "replace", "rebuild_local" or "unsupported". An explicit "schema_reset" is
  the only way out of "unsupported", and it keeps the client's queue. Push,
  pull and rebuild accept only the exact current manifest; anything else is
  refused whole with 422 "schema_mismatch", and no work is done. Protocol 3 has
  no "fetch" action. The harness publishes a fixed lineage, connects clients
  that hold each possible reference, and checks the action, the members that
  go with it, and that a refused request changed nothing. On the client side
  it checks that each action is carried out as dispatched.

  Background:
    Given a registered table "tasks" with columns:
      | column   | type    | nullable | key |
      | id       | string  | false    | yes |
      | owner_id | string  | false    | no  |
      | title    | string  | false    | no  |
    And table "tasks" places each row in scope "user:{owner_id}"
    And a registered table "notes" with columns:
      | column  | type   | nullable | key |
      | id      | string | false    | yes |
      | team_id | string | false    | no  |
      | body    | string | false    | no  |
    And table "notes" places each row in scope "team:{team_id}"
    And the schema lineage used below is:
      | version | class   | change                                                                   | affected scopes |
      | 1       | initial | tables "tasks" and "notes"                                               |                 |
      | 2       | class_2 | adds nullable column "note" of type "string" to "tasks"                  |                 |
      | 3       | class_3 | adds column "priority" of type "int" with historical values to "notes"   | team:t_1        |
      | 4       | class_4 | removes column "note" from "tasks"                                       |                 |

  Rule: Connect applies the exact per-client dispatch for Class 1 through Class 4

    @cap:schema @cap:scopes
    Scenario Outline: A client holding version <installed> gets "<action>" when version <current> is current
      Given user "alice" is assigned scope "team:t_1"
      And user "bob" is assigned scope "team:t_2"
      And the harness client "H" of user "<user>" has connected while lineage version <installed> was current
      And the operator has published the lineage up to version <current>
      When the harness client "H" connects presenting its installed schema
      Then the response status is 200
      And the connect response has schema action "<action>"
      And "schema.version" is <current> and "schema.hash" is the hash of lineage version <current>
      And the connect response carries exactly the members the action table requires for "<action>"
      And member "schema.reason" is <reason>
      And member "affected_scopes" is <affected>

      Examples:
        | installed | current | user  | action        | reason                           | affected       |
        | 1         | 1       | alice | none          | absent                           | absent         |
        | 1         | 2       | alice | replace       | absent                           | absent         |
        | 2         | 3       | alice | rebuild_local | absent                           | ["team:t_1"]   |
        | 1         | 3       | alice | rebuild_local | absent                           | ["team:t_1"]   |
        | 2         | 3       | bob   | replace       | absent                           | absent         |
        | 3         | 4       | alice | unsupported   | "incompatible_schema_transition" | absent         |
        | 1         | 4       | bob   | unsupported   | "incompatible_schema_transition" | absent         |

    @cap:provision
    Scenario: Class 1 server-only changes publish nothing and dispatch "none"
      Given the harness client "H" of user "alice" has connected while lineage version 1 was current
      When the operator changes the membership rule of "tasks" without publishing a manifest
      And the harness client "H" connects presenting its installed schema
      Then the connect response has schema action "none"
      And "schema.version" is 1

    Scenario: A fresh identity presenting the exact sentinel gets the full manifest and a generation
      When the harness client "H" of user "alice" connects for the first time with schema {"version":0,"hash":""}
      Then the response status is 200
      And the connect response has schema action "replace"
      And member "client_generation" is an integer of at least 1
      And member "schema_definition" matches schema "schema-manifest"

    Scenario: A reference that names no manifest of the lineage is unsupported
      Given the harness client "H" of user "alice" has connected while lineage version 1 was current
      When the harness client "H" connects presenting schema {"version":9,"hash":"0000000000000000000000000000000000000000000000000000000000000009"}
      Then the response status is 200
      And the connect response has schema action "unsupported"
      And member "schema.reason" is "unknown_schema_lineage"
      And members "schema_definition" and "affected_scopes" are absent

    @negative
    Scenario Outline: Connect refuses <case> with <status> "<code>"
      Given the harness client "H" of user "alice" has connected while lineage version 1 was current
      When the harness sends a raw connect request as client "<client>" of user "alice" with "protocol_version" <protocol>, "schema" <schema> and <extra>
      Then the response status is <status> with error code "<code>"
      And the error body carries exactly the members <members>
      And no durable state changed on the server

      Examples:
        | case                                   | client | protocol | schema                          | extra                              | status | code                     | members                                                    |
        | protocol 2 with a bad reference        | H      | 2        | {"version":0,"hash":"x"}        | its current "client_generation"    | 426    | upgrade_required         | "required_protocol_version" 3, "received_protocol_version" 2 |
        | a zero version with a nonempty hash    | H      | 3        | {"version":0,"hash":"x"}        | its current "client_generation"    | 400    | invalid_schema_reference | "received_schema" {"version":0,"hash":"x"}                  |
        | a positive version with an empty hash  | H      | 3        | {"version":5,"hash":""}         | its current "client_generation"    | 400    | invalid_schema_reference | "received_schema" {"version":5,"hash":""}                   |
        | the sentinel with a generation         | H      | 3        | {"version":0,"hash":""}         | its current "client_generation"    | 400    | invalid_schema_reference | "received_schema" {"version":0,"hash":""}                   |
        | the sentinel with a reset              | N      | 3        | {"version":0,"hash":""}         | "schema_reset" true                | 400    | invalid_schema_reference | "received_schema" {"version":0,"hash":""}                   |
        | the sentinel from a known identity     | H      | 3        | {"version":0,"hash":""}         | no "client_generation"             | 400    | invalid_schema_reference | "received_schema" {"version":0,"hash":""}                   |

  Rule: An explicit schema reset is the recovery path out of "unsupported" and preserves the queue

    @cap:schema @cap:scopes
    Scenario: A reset with assigned scopes rebuilds all of them with null cursors
      Given user "alice" is assigned scope "team:t_1"
      And the harness client "H" of user "alice" has completed a sync while lineage version 3 was current
      And the operator has published the lineage up to version 4
      And the harness client "H" has received schema action "unsupported"
      When the harness client "H" connects presenting its installed schema with "schema_reset" true
      Then the response status is 200
      And the connect response has schema action "rebuild_local"
      And member "affected_scopes" is ["team:t_1","user:alice"]
      And member "scope_cursor_updates" is {"team:t_1":null,"user:alice":null}
      And "schema_definition.schema_version" is 4

    @cap:schema @cap:scopes
    Scenario: A reset with no assigned scope replaces the manifest
      Given the default scope of user "carol" is revoked
      And the harness client "H" of user "carol" has connected while lineage version 3 was current
      And the operator has published the lineage up to version 4
      When the harness client "H" connects presenting its installed schema with "schema_reset" true
      Then the connect response has schema action "replace"
      And member "affected_scopes" is absent

    @negative @cap:schema
    Scenario: Without a reset the unsupported client stays unsupported, with a reset it never does
      Given the harness client "H" of user "alice" has connected while lineage version 3 was current
      And the operator has published the lineage up to version 4
      When the harness client "H" connects presenting its installed schema
      Then the connect response has schema action "unsupported"
      When the harness client "H" connects presenting its installed schema with "schema_reset" true
      Then the connect response has schema action "rebuild_local"

    @cap:schema
    Scenario: The client stops normal sync on "unsupported" and waits for an explicit reset
      Given client "A" of user "alice" has completed a sync while lineage version 3 was current
      And the operator has published the lineage up to version 4
      When client "A" syncs
      Then client "A" reports state "error" with failure operation "schema" and recovery action "schema_reset"
      And the proxy recorded no "push", "pull" or "rebuild" request from client "A" after that connect
      When client "A" syncs
      Then the proxy recorded no request from client "A" during that sync

    @cap:schema
    Scenario: A reset keeps the queue, sealed batches and local-only rows and rebuilds the synced tables
      Given client "A" of user "alice" has completed a sync while lineage version 3 was current
      And client "A" has a local-only table "drafts" holding 2 rows
      And client "A" has 3 queued mutations on "tasks" made while offline
      And the operator has published the lineage up to version 4
      And client "A" has synced and reports state "error" with recovery action "schema_reset"
      And the harness has recorded the mutations, batches and rejections client "A" inspects
      When client "A" resets its schema and starts
      Then the proxy recorded a connect from client "A" with "schema_reset" true
      And client "A" inspection shows the same 3 mutation IDs with unchanged authored fields, authored schema and local order
      And the sealed batches of client "A" are byte-identical to the recorded ones
      And the local-only table "drafts" of client "A" still holds the same 2 rows
      And client "A" installed manifest version 4 and rebuilt scope "user:alice"

  Rule: The client carries out the dispatched action and nothing else

    @cap:schema @cap:scopes
    Scenario: "rebuild_local" rebuilds exactly the affected scopes after applying the manifest
      Given user "alice" is assigned scope "team:t_1"
      And user "alice" is assigned scope "team:t_2"
        And client "A" of user "alice" has completed a sync while lineage version 2 was current
      And the operator has published the lineage up to version 3
      When client "A" syncs
      Then client "A" installed manifest version 3
      And the proxy recorded rebuild requests from client "A" for scope "team:t_1" only
      And the next pull of client "A" presents the replacement cursors for scopes "team:t_2" and "user:alice"

    @negative @cap:schema
    Scenario: The client refuses a "rebuild_local" response with an empty affected scope list
      Given client "A" of user "alice" has completed a sync while lineage version 2 was current
      And the operator has published the lineage up to version 3
      And the proxy rewrites the next connect response for client "A" to carry "affected_scopes": []
      When client "A" syncs
      Then client "A" reports state "error" with a non-retryable failure of operation "schema"
      And client "A" still has manifest version 2 installed
      And no durable state changed on client "A" other than its status and failure record

  Rule: Push, pull and rebuild require the exact current manifest and do no work otherwise

    @negative @cap:schema
    Scenario Outline: A <endpoint> request naming a noncurrent manifest is refused whole
      Given the harness client "H" of user "alice" has completed a sync while lineage version 1 was current
      And the operator has published the lineage up to version 2
      When the harness client "H" sends a valid <endpoint> request presenting schema version 1
      Then the response status is 422 with error code "schema_mismatch"
      And the error body has "current_schema" equal to lineage version 2 and "received_schema" equal to lineage version 1
      And the error body has no success members
      And no durable state changed on the server

      Examples:
        | endpoint |
        | push     |
        | pull     |
        | rebuild  |

    @negative @cap:schema
    Scenario: A push refused for its schema leaves no ledger, so the same batch later executes first time
      Given the harness client "H" of user "alice" has completed a sync while lineage version 1 was current
      And the operator has published the lineage up to version 2
      When the harness client "H" pushes batch "b1" inserting task "t9" presenting schema version 1
      Then the response status is 422 with error code "schema_mismatch"
      When the harness client "H" pushes batch "b1" inserting task "t9" presenting schema version 2
      Then the response status is 200
      And the push response lists mutation "t9-insert" as "applied"

    @negative @cap:schema @cap:scopes
    Scenario: A pull refused for its schema writes no assignment state
      Given the harness client "H" of user "alice" has completed a sync while lineage version 1 was current
      And the operator has published the lineage up to version 2
      And user "alice" is assigned scope "team:t_1"
      When the harness client "H" pulls presenting schema version 1
      Then the response status is 422 with error code "schema_mismatch"
      When the harness client "H" connects presenting its installed schema
      Then member "scope_set_version" is one more than before the refused pull
      And member "scopes.add" is [{"id":"team:t_1","cursor":null}]

  Rule: Protocol 3 never emits the "fetch" action

    @property @cap:schema @cap:scopes
    Scenario: No connect in any generated client state answers "fetch"
      Given the operator has published the lineage up to version 4
      When for many generated client states the harness sends a connect, each state drawn from: installed reference among lineage versions 1 to 4, an unknown reference or the fresh sentinel; "schema_reset" absent, false or true; "client_generation" present or absent; and 0 to 3 assigned team scopes
      Then no response carries schema action "fetch"
      And every 200 response has an action among "none", "replace", "rebuild_local" and "unsupported" that the dispatch table gives for that state
