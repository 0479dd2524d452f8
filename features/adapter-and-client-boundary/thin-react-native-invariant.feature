@SYNC-BOUND-002 @client @internal @form:react-native-binding
Feature: Thin React Native Invariant
  React Native is a binding, not a third sync engine. Queueing, cursors,
  conflict handling, applying server data and rebuilding must run in the
  native iOS and Android clients. The JavaScript layer passes calls and events
  through. If JavaScript made its own semantic transition, the same app could
  behave differently depending on whether it was built with React Native or
  natively. The harness runs the same scripted scenario through the React
  Native binding and directly against the native client of the same platform,
  on both platforms. It compares the wire exchanges and the durable state, and
  it checks that state written through the binding lives in the native store.
  Clients without a React Native binding report this requirement as not
  applicable.

  Background:
    Given a registered table "tasks" with columns:
      | column   | type   | key | nullable |
      | id       | string | yes | no       |
      | owner_id | string | no  | no       |
      | title    | string | no  | no       |
    And table "tasks" places each row in scope "user:{owner_id}"

  Rule: React Native delegates queue, cursor, conflict, apply and rebuild behavior to the native client on each platform

    @cap:reactNative
    Scenario Outline: The React Native binding on <platform> behaves exactly like the native client
      Given client "RN" is the React Native binding on "<platform>" for user "alice"
      And client "N" is the native "<platform>" client for user "bob"
      And both clients run this script against the server with the same page and batch sizes:
        | step                                                                       |
        | connect and rebuild every assigned scope                                   |
        | insert task "t1", update its title twice, sync                             |
        | another client changes task "t1", then this client updates it and syncs    |
        | the server adds 5 tasks for this user, sync with page limit 2              |
        | the proxy drops the next push response, sync twice                         |
      Then the request sequences recorded for "RN" and "N" are equal after replacing user, client, mutation, batch and rebuild IDs and opaque tokens with stable aliases
      And the inspected mutations, rejections, cursors presence, checksums, provenance and state logs of "RN" and "N" are equal under the same aliasing

      Examples:
        | platform |
        | ios      |
        | android  |

    @cap:reactNative
    Scenario: The binding's row and scope digests are the native ones
      Given client "RN" is the React Native binding on "ios" for user "alice"
      When client "RN" computes the typed-value and row-digest vectors of the shared vector set through the binding
      Then every result equals the expected bytes of its vector

  Rule: JavaScript owns no semantic sync transition

    @negative @cap:reactNative @cap:crash
    Scenario: Intent written through the binding survives a JavaScript reload because it lives in the native queue
      Given client "RN" is the React Native binding on "android" for user "alice"
      And client "RN" has connected and rebuilt every assigned scope
      And client "RN" executes SQL:
        """
        INSERT INTO tasks (id, owner_id, title) VALUES ('t2', 'alice', 'Buy bread');
        """
      When the harness reloads the JavaScript runtime of client "RN" without restarting the native process
      Then the native queue of client "RN" still holds the insert of "t2" with its original mutation ID
      When client "RN" syncs
      Then the push of client "RN" carries that mutation ID

    @negative @cap:reactNative
    Scenario: An illegal transition requested through the binding is refused by the native validator
      Given client "RN" is the React Native binding on "ios" for user "alice"
      And client "RN" has stopped
      When the binding asks the native client to move from "stopped" to "pulling"
      Then the call fails with code "invalid_state_transition"
      And client "RN" state log shows no transition out of "stopped"
      And the durable snapshot digest of client "RN" is unchanged
