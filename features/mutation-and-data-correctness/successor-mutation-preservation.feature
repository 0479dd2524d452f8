@SYNC-MUT-022 @client
Feature: Successor Mutation Preservation
  When a schema change or an application decision forces a client to change
  what a queued mutation says, the changed intent is a new mutation with a new
  UUID, and the original stays on record for inspection. A mutation whose
  content does not change keeps its UUID and every byte of its authored
  content, even when it has to travel in a new batch after a reconnect. A UUID
  therefore always names one exact content, which is what makes replay safe;
  folding new content into an old UUID, or losing either record without an
  explicit policy, breaks that. The harness forces reconnects (schema change,
  generation expiry), lets the application resolve a rejected intent, and
  compares every mutation the proxy saw and every record the client shows.

  Background:
    Given a registered table "notes" with columns:
      | column     | type          | key | writable | lifecycle  |
      | id         | string        | yes | no       |            |
      | owner_id   | string        | no  | yes      |            |
      | body       | string        | no  | yes      |            |
      | tag        | string        | no  | yes      |            |
      | updated_at | datetime      | no  | no       | updated_at |
      | deleted_at | datetime      | no  | no       | deleted_at |
    And table "notes" places each row in scope "user:{owner_id}"
    And the current schema is remembered as "S1"
    And client "W" of user "alice" has connected
    And the server holds these "notes" rows, created by client "W":
      | id  | owner_id | body | tag | version |
      | n-1 | alice    | milk | a   | V1      |
    And capture has materialized every committed source transaction
    And client "A" of user "alice" has connected and rebuilt every assigned scope

  Rule: an unchanged queued mutation keeps its UUID and complete authored content

    @cap:provision @cap:schema
    Scenario: after a schema_mismatch the successor batch carries the unchanged mutations byte for byte
      Given client "A" executes SQL:
        """
        INSERT INTO notes (id, owner_id, body) VALUES ('n-2', 'alice', 'eggs')
        UPDATE notes SET body = 'oat' WHERE id = 'n-1'
        """
      And the proxy holds the next push request of client "A" before forwarding it
      And client "A" syncs in the background
      And the operator publishes a new schema version that adds nullable writable column "note" of type string to table "notes"
      When the proxy forwards the held request
      And client "A" syncs
      Then the first push request of client "A" was answered 422 with error code "schema_mismatch"
      And the next push request of client "A" has a new batch_id and the new request schema
      And each of its mutations has the same mutation_id as in the first request and a byte-identical canonical mutation, authored_schema "S1" included
      And client "A" shows the first batch with its original request bytes

    @cap:provision @cap:clients
    Scenario: after a generation expiry the successor batch keeps every mutation ID and content
      Given client "A" executes SQL "UPDATE notes SET body = 'oat' WHERE id = 'n-1'"
      And the proxy holds the next push request of client "A" before forwarding it
      And client "A" syncs in the background
      And the operator expires the client generation of client "A"
      When the proxy forwards the held request
      And client "A" syncs
      Then the next push request of client "A" has a new batch_id and carries the update of row "n-1" with the same mutation_id and a byte-identical canonical mutation
      And the server holds row "n-1" of table "notes" with body "oat"

  Rule: reconciliation gives changed intent a new mutation UUID

    @cap:provision @cap:schema
    Scenario: an application that writes the edit again without the removed field creates a new mutation
      Given client "A" executes SQL "UPDATE notes SET body = 'oat', tag = 'b' WHERE id = 'n-1'"
      And the operator publishes a new schema version in which table "notes" no longer has field "tag"
      And client "A" syncs
      And the application asks client "A" to reset its schema and start
      And client "A" shows the update of row "n-1" with status "server_rejected" and code "schema_incompatible", remembered as "R1"
      When client "A" executes SQL "UPDATE notes SET body = 'oat milk' WHERE id = 'n-1'"
      And client "A" syncs
      Then the proxy recorded an update of row "n-1" setting body "oat milk" whose mutation_id differs from that of "R1"
      And that update was accepted

    @cap:provision
    Scenario: every mutation ID the proxy saw always carries one content
      Given client "A" executes SQL:
        """
        UPDATE notes SET body = 'oat' WHERE id = 'n-1'
        INSERT INTO notes (id, owner_id, body) VALUES ('n-3', 'alice', 'salt')
        """
      And the proxy answers the next push of client "A" with status 503, code "temporary_unavailable" and Retry-After "1"
      When client "A" syncs
      And client "A" executes SQL "UPDATE notes SET body = 'soy' WHERE id = 'n-1'"
      And client "A" syncs
      Then for every mutation_id in the push requests the proxy recorded from client "A", every occurrence has byte-identical canonical content
      And the update setting body "soy" has a mutation_id that no earlier push request carried

  Rule: the original intent stays inspectable

    @cap:provision @cap:schema @cap:crash
    Scenario: the original and its successor are both listed until an explicit policy clears the original
      Given client "A" executes SQL "UPDATE notes SET body = 'oat', tag = 'b' WHERE id = 'n-1'"
      And the operator publishes a new schema version in which table "notes" no longer has field "tag"
      And client "A" syncs
      And the application asks client "A" to reset its schema and start
      And client "A" shows the update of row "n-1" with status "server_rejected" and code "schema_incompatible", remembered as "R1"
      And client "A" executes SQL "UPDATE notes SET body = 'oat milk' WHERE id = 'n-1'"
      And client "A" syncs
      When client "A" is killed and restarted
      Then client "A" shows the record of "R1" with its mutation ID, authored fields body "oat" and tag "b" and authored schema "S1"
      And client "A" shows the successor update with status "accepted"
      When the application on client "A" clears retained rejections
      Then client "A" shows no record of "R1"
      And client "A" shows the successor update with status "accepted"

  Rule: a successor is never folded into the original, and neither is deleted without explicit policy

    @negative @cap:provision @cap:schema
    Scenario: the original UUID is never sent with the successor's content
      Given client "A" executes SQL "UPDATE notes SET body = 'oat', tag = 'b' WHERE id = 'n-1'"
      And the operator publishes a new schema version in which table "notes" no longer has field "tag"
      And client "A" syncs
      And the application asks client "A" to reset its schema and start
      And client "A" shows the update of row "n-1" with status "server_rejected" and code "schema_incompatible", remembered as "R1"
      When client "A" executes SQL "UPDATE notes SET body = 'oat milk' WHERE id = 'n-1'"
      And client "A" syncs
      And client "A" syncs
      Then the proxy recorded the mutation_id of "R1" only with the content body "oat" and tag "b"
      And no push response to client "A" has status 409 with error code "idempotency_conflict"
      And client "A" shows the record of "R1" and the successor update as two records
