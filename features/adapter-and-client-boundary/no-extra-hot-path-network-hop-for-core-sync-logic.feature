@SYNC-BOUND-006 @server @internal
Feature: No Extra Hot-Path Network Hop For Core Sync Logic
  The core of connect, push, pull and rebuild runs inside PostgreSQL, next to
  the data and under the same transaction. A deployment that forwards these
  requests to a separate sync service adds a network hop that can fail
  independently. It also moves decisions out of the transaction that makes
  them safe. The harness records the outbound connections of the server
  process while it serves each endpoint, and it runs the endpoints with all
  egress except the database blocked.

  Background:
    Given a registered table "tasks" with columns:
      | column   | type   | key | nullable |
      | id       | string | yes | no       |
      | owner_id | string | no  | no       |
      | title    | string | no  | no       |
    And table "tasks" places each row in scope "user:{owner_id}"

  Rule: The production core sync path calls the PostgreSQL extension directly

    @cap:inspect
    Scenario Outline: Serving <endpoint> opens connections only to the database
      Given client "A" of user "alice" has connected and rebuilt every assigned scope
      When client "A" <action>
      Then the response status is 200
      And server inspection shows that, while serving that request, the server process reached only its PostgreSQL database over the network and did the "<endpoint>" work on it

      Examples:
        | endpoint | action                                                                        |
        | connect  | connects                                                                      |
        | push     | pushes a batch inserting task "t1" owned by "alice" with title "Hop check"    |
        | pull     | pulls                                                                         |
        | rebuild  | requests the first rebuild page of "user:alice"                              |

  Rule: The core sync path makes no outbound RPC to a separate sync service

    @negative @cap:provision
    Scenario: Every sync endpoint works with all egress except the database blocked
      Given the server process may reach only its PostgreSQL database over the network
      When client "A" of user "alice" syncs after writing task "t2" owned by "alice"
      And client "A" syncs again after another client changes task "t2"
      Then every connect, push, pull and rebuild response to client "A" has status 200
      And client "A" has row "t2" of "tasks" as the other client changed it
