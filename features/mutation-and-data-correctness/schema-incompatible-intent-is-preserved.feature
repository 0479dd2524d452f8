@SYNC-MUT-020 @server @client
Feature: Schema Incompatible Intent Is Preserved
  A user may have edited a field offline that a later server schema no longer
  has. The server answers such a mutation with rejected_terminal
  schema_incompatible (retryable false, authored_schema, current_schema and
  the sorted incompatible_field_ids) instead of silently dropping the field
  and applying the rest. The client must then keep the whole original intent
  (mutation UUID, every authored field and value, authored schema, base
  version, client version and local order) in a durable, inspectable blocked
  state, and must neither rewrite it, delete it nor send it again on its own;
  only the application or the user can decide what happens to it. The harness
  removes a field from the schema while an edit of it is queued, then checks
  the outcome on the wire, the client's inspection output across restarts and
  further syncs, and the server row. Removing a field is a class 4 change, so
  a client gets past it only by resetting its schema (the one exit from
  `unsupported`); its queued intent then meets the new schema.

  Background:
    Given a registered table "notes" with columns:
      | column     | type          | key | writable | lifecycle  |
      | id         | string        | yes | no       |            |
      | owner_id   | string        | no  | yes      |            |
      | body       | string        | no  | yes      |            |
      | tag        | string        | no  | yes      |            |
      | color      | string        | no  | yes      |            |
      | updated_at | datetime      | no  | no       | updated_at |
      | deleted_at | datetime      | no  | no       | deleted_at |
    And table "notes" places each row in scope "user:{owner_id}"
    And the current schema is remembered as "S1"
    And client "W" of user "alice" has connected
    And the server holds these "notes" rows, created by client "W":
      | id  | owner_id | body | tag | color | version |
      | n-1 | alice    | milk | a   | red   | V1      |
    And capture has materialized every committed source transaction

  Rule: the server answers a mutation it cannot represent under the current schema with a complete schema_incompatible outcome and never strips the field

    @server @negative @cap:provision @cap:schema
    Scenario: an update authored under the old schema that writes removed fields is rejected whole
      Given the operator publishes a new schema version in which table "notes" no longer has fields "tag" and "color"
      And the new schema is remembered as "S2"
      And client "W" has connected again with "schema_reset" true and received the new schema
      When client "W" pushes a batch under the new schema with:
        | mutation_id                          | operation | table | pk  | base_version | authored_schema | body | tag | color |
        | 20a00001-0000-4000-8000-000000000001 | update    | notes | n-1 | V1           | S1              | oat  | b   | blue  |
      Then the response status is 200
      And the rejected outcome of mutation "20a00001-0000-4000-8000-000000000001" has status "rejected_terminal", code "schema_incompatible", "retryable": false, authored_schema "S1", current_schema "S2" and incompatible_field_ids ["color", "tag"] as field IDs in increasing byte order
      And that outcome has no member "server_row", "row_checksum" or "server_version"
      And the server holds row "n-1" of table "notes" with body "milk" at version "V1"

  Rule: the client keeps the original UUID, complete authored payload, authored schema, base version, client version and local order in a durable inspectable blocked state

    @client @cap:provision @cap:schema @cap:crash
    Scenario: the blocked intent is kept whole and survives a restart
      Given client "A" of user "alice" has connected and rebuilt every assigned scope
      And client "A" executes SQL "UPDATE notes SET body = 'oat', tag = 'b' WHERE id = 'n-1'"
      And client "A" shows the update of row "n-1" with mutation ID, authored fields, authored schema, base version, client version and local order, remembered as "R1"
      And the operator publishes a new schema version in which table "notes" no longer has field "tag"
      And client "A" syncs
      When the application asks client "A" to reset its schema and start
      Then the proxy delivered to client "A" a rejected_terminal outcome with code "schema_incompatible" for the mutation ID of "R1"
      And client "A" shows the record of "R1" with status "server_rejected", rejection code "schema_incompatible", and mutation ID, authored fields body "oat" and tag "b", authored schema "S1", base version "V1", client version and local order all equal to "R1"
      When client "A" is killed and restarted
      Then client "A" shows the record of "R1" with status "server_rejected", rejection code "schema_incompatible", and mutation ID, authored fields body "oat" and tag "b", authored schema "S1", base version "V1", client version and local order all equal to "R1"

  Rule: the client neither drops nor rewrites an incompatible field, deletes the intent, nor retries it automatically

    @client @negative @cap:provision @cap:schema @cap:crash
    Scenario: further syncs and a restart never send the intent again in any form
      Given client "A" of user "alice" has connected and rebuilt every assigned scope
      And client "A" executes SQL "UPDATE notes SET body = 'oat', tag = 'b' WHERE id = 'n-1'"
      And the operator publishes a new schema version in which table "notes" no longer has field "tag"
      And client "A" syncs
      And the application asks client "A" to reset its schema and start
      When client "A" syncs
      And client "A" is killed and restarted
      And client "A" syncs
      Then the proxy recorded the mutation ID of the update of row "n-1" in no push request of client "A" after the one answered with its schema_incompatible outcome
      And no push request of client "A" carries a mutation of row "n-1" setting body "oat" without tag
      And client "A" still shows the update of row "n-1" with status "server_rejected" and code "schema_incompatible"
      And the server holds row "n-1" of table "notes" with body "milk" at version "V1"
