@SYNC-LOCAL-001 @client
Feature: Durable Queue Invariant
  The queue is the only record of what the user did while offline, and its IDs
  are what makes a resend safe for the server. Each queued mutation (ID,
  authored table, key, fields and values, authored schema, base version,
  client time and local order) and each sealed batch (ID and exact bytes) must
  be written durably before anything goes on the wire. All of it must come
  back unchanged after the process dies. An ID that changes after a restart
  turns a safe retry into a second write, or into an idempotency conflict. The
  harness kills the client process at the points where loss is most likely
  and compares inspection before and after. It then checks on the wire that
  what was sent before the kill is sent again byte for byte, or was never
  sent.

  Background:
    Given a registered table "tasks" with columns:
      | column   | type    | key | nullable |
      | id       | string  | yes | no       |
      | owner_id | string  | no  | no       |
      | title    | string  | no  | no       |
      | done     | boolean | no  | no       |
    And table "tasks" places each row in scope "user:{owner_id}"
    And client "A" of user "alice" has connected and rebuilt every assigned scope

  Rule: Queued mutations, their identities, authored content and order are persisted before the first transmission

    @cap:crash
    Scenario: A write killed right after its local commit is fully queued after restart
      Given client "A" is armed to crash at "after_capture_commit"
      When client "A" executes SQL:
        """
        INSERT INTO tasks (id, owner_id, title, done) VALUES ('t1', 'alice', 'Book flights', false);
        """
      Then client "A" has crashed
      When the harness restarts client "A"
      Then client "A" has row "t1" of "tasks" with "title" "Book flights"
      And client "A" inspection shows exactly one mutation, an "insert" of "t1" with status "pending", authored fields "id", "owner_id", "title" and "done", a canonical lowercase UUID "mutationID" and a "clientVersion" in the form "YYYY-MM-DDTHH:MM:SS.ffffffZ"

    @cap:crash
    Scenario: The first push request is already durable when it reaches the proxy
      Given client "A" executes SQL:
        """
        INSERT INTO tasks (id, owner_id, title, done) VALUES ('t2', 'alice', 'Pack bags', false);
        UPDATE tasks SET done = true WHERE id = 't2';
        INSERT INTO tasks (id, owner_id, title, done) VALUES ('t3', 'alice', 'Water plants', false);
        """
      And the proxy holds the next "push" request of client "A" without forwarding it
      When client "A" syncs in the background
      And the harness kills client "A" while the proxy holds that request
      And the proxy drops the held request
      And the harness restarts client "A"
      And client "A" syncs
      Then the next push of client "A" is byte-identical to the held request
      And the server applied each of its mutations exactly once

  Rule: Queue records survive process death and restart without loss or regeneration

    @negative @cap:crash
    Scenario Outline: A kill at "<point>" neither loses nor regenerates any queued identity
      Given client "A" executes SQL:
        """
        INSERT INTO tasks (id, owner_id, title, done) VALUES ('t4', 'alice', 'Renew passport', false);
        INSERT INTO tasks (id, owner_id, title, done) VALUES ('t5', 'alice', 'Pay rent', false);
        UPDATE tasks SET title = 'Pay rent today' WHERE id = 't5';
        """
      And the harness has recorded the mutations client "A" inspects as "before"
      And client "A" is armed to crash at "<point>"
      When client "A" syncs
      And the harness restarts client "A"
      Then every mutation recorded as "before" is still inspectable with the same "mutationID", "localOrder", "authoredSchema", "baseVersion", "clientVersion" and authored fields, or has reached exactly one outcome
      And client "A" inspection shows no mutation ID that was not recorded as "before" other than normalized mutations linked to them
      When client "A" syncs
      Then every push request client "A" sent under an already used "batch_id" is byte-identical to its first sending
      And the server holds rows "t4" and "t5" with titles "Renew passport" and "Pay rent today"

      Examples:
        | point                         |
        | after_seal_commit             |
        | before_push_send              |
        | after_push_response_received  |
        | after_push_apply_commit       |

    @negative @cap:crash
    Scenario: Local order survives a restart and decides the wire order
      Given client "A" executes SQL:
        """
        INSERT INTO tasks (id, owner_id, title, done) VALUES ('t6', 'alice', 'first', false);
        INSERT INTO tasks (id, owner_id, title, done) VALUES ('t7', 'alice', 'second', false);
        INSERT INTO tasks (id, owner_id, title, done) VALUES ('t8', 'alice', 'third', false);
        """
      When the harness kills client "A"
      And the harness restarts client "A"
      And client "A" syncs
      Then the pushed mutations of client "A" are the inserts of "t6", "t7" and "t8" in that order
