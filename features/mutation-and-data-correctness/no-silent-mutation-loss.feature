@SYNC-MUT-003 @client
Feature: No Silent Mutation Loss
  Once the client has captured a local write, that intent may not simply
  disappear. It stays durably pending until it reaches exactly one durable
  outcome: accepted or server-rejected from a push response, or one of the
  four local outcomes superseded_before_send, cancelled_before_send,
  blocked_by_predecessor and exceeds_push_limit. The local outcomes stay
  visible through inspection, and the first three keep the link to the
  normalized mutation or the predecessor that explains them. Only an explicit
  client policy operation may clear a record. The harness produces every
  outcome through application SQL, restarts the client process, injects
  request failures, and compares the set of captured mutation IDs with what
  inspection reports.

  Background:
    Given a registered table "notes" with columns:
      | column     | type          | key | writable | lifecycle  |
      | id         | string        | yes | no       |            |
      | owner_id   | string        | no  | yes      |            |
      | body       | string        | no  | yes      |            |
      | price      | decimal(10,2) | no  | yes      |            |
      | updated_at | datetime      | no  | no       | updated_at |
      | deleted_at | datetime      | no  | no       | deleted_at |
    And table "notes" places each row in scope "user:{owner_id}"
    And client "A" of user "alice" has connected and rebuilt every assigned scope
    And client "W" of user "alice" has connected
    And the server holds these "notes" rows, created by client "W":
      | id  | owner_id | body  | version |
      | n-1 | alice    | milk  | V1      |
      | n-2 | alice    | bread | V2      |
    And capture has materialized every committed source transaction
    And client "A" syncs

  Rule: every captured mutation stays durably pending or reaches exactly one durable outcome

    @cap:provision @cap:crash
    Scenario Outline: a mutation that ends <outcome> keeps exactly that one state across a restart
      When <action>
      Then client "A" shows the mutation record of <record> with status "<outcome>"
      When client "A" is killed and restarted
      Then client "A" shows the mutation record of <record> with status "<outcome>"
      And every mutation ID client "A" captured appears exactly once in its inspection output, with one status

      Examples:
        | outcome                | record                        | action                                                                                                                                                                                   |
        | pending                | the update of row "n-1"       | client "A" executes SQL "UPDATE notes SET body = 'oat' WHERE id = 'n-1'" without syncing                                                                                                  |
        | accepted               | the update of row "n-1"       | client "A" executes SQL "UPDATE notes SET body = 'oat' WHERE id = 'n-1'" and syncs                                                                                                        |
        | server_rejected        | the update of row "n-2"       | client "W" updates row "n-2" of table "notes" from "V2" setting body "rye", then client "A" executes SQL "UPDATE notes SET body = 'spelt' WHERE id = 'n-2'" and syncs                                       |
        | superseded_before_send | the insert of row "n-3"       | client "A" executes SQL "INSERT INTO notes (id, owner_id, body) VALUES ('n-3', 'alice', 'figs')" and SQL "UPDATE notes SET body = 'dates' WHERE id = 'n-3'" and syncs                     |
        | cancelled_before_send  | the insert of row "n-4"       | client "A" executes SQL "INSERT INTO notes (id, owner_id, body) VALUES ('n-4', 'alice', 'kale')" and SQL "DELETE FROM notes WHERE id = 'n-4'" and syncs                                   |
        | blocked_by_predecessor | the second update of row "n-2" | client "W" updates row "n-2" of table "notes" from "V2" setting body "rye", then client "A" executes SQL "UPDATE notes SET body = 'spelt' WHERE id = 'n-2'", syncs while the proxy pauses the push response, executes SQL "UPDATE notes SET price = '3' WHERE id = 'n-2'" and lets the push response through |
        | exceeds_push_limit     | the insert of row "n-5"       | client "A" executes SQL "INSERT INTO notes (id, owner_id, body) VALUES ('n-5', 'alice', <a string of 70000 'x' characters>)" and syncs                                                   |

  Rule: the four local outcomes remain inspectable

    @cap:provision @cap:crash
    Scenario: local outcomes are still listed with their authored content after a restart and further syncs
      Given client "W" updates row "n-2" of table "notes" from "V2" setting body "rye"
      When client "A" executes SQL:
        """
        INSERT INTO notes (id, owner_id, body) VALUES ('n-3', 'alice', 'figs')
        UPDATE notes SET body = 'dates' WHERE id = 'n-3'
        INSERT INTO notes (id, owner_id, body) VALUES ('n-4', 'alice', 'kale')
        DELETE FROM notes WHERE id = 'n-4'
        """
      And client "A" executes SQL "INSERT INTO notes (id, owner_id, body) VALUES ('n-5', 'alice', <a string of 70000 'x' characters>)"
      And client "A" syncs
      And client "A" is killed and restarted
      And client "A" syncs
      And client "A" syncs
      Then client "A" shows these mutation records:
        | table | pk  | operation | status                 | authored fields                  |
        | notes | n-3 | insert    | superseded_before_send | owner_id "alice", body "figs"    |
        | notes | n-3 | update    | superseded_before_send | body "dates"                     |
        | notes | n-4 | insert    | cancelled_before_send  | owner_id "alice", body "kale"    |
        | notes | n-4 | delete    | cancelled_before_send  |                                  |
        | notes | n-5 | insert    | exceeds_push_limit     | owner_id "alice", body of 70000 characters |

  Rule: superseded, cancelled and blocked records stay linked to the normalized or predecessor intent

    @cap:provision
    Scenario: each local outcome carries a link that resolves to another inspectable record
      Given client "W" updates row "n-2" of table "notes" from "V2" setting body "rye"
      When client "A" executes SQL:
        """
        INSERT INTO notes (id, owner_id, body) VALUES ('n-3', 'alice', 'figs')
        UPDATE notes SET body = 'dates' WHERE id = 'n-3'
        INSERT INTO notes (id, owner_id, body) VALUES ('n-4', 'alice', 'kale')
        DELETE FROM notes WHERE id = 'n-4'
        """
      And client "A" executes SQL "UPDATE notes SET body = 'spelt' WHERE id = 'n-2'"
      And the proxy holds the next push response to client "A"
      And client "A" syncs in the background
      And client "A" executes SQL "UPDATE notes SET price = '3' WHERE id = 'n-2'"
      And the proxy releases the held response
      And client "A" syncs
      Then both superseded records of row "n-3" link through normalizedMutationID to the insert of row "n-3" that the proxy saw on the wire
      And each cancelled record of row "n-4" links to the other record of that chain
      And the blocked update of row "n-2" links through dependsOnMutationID to the rejected update of row "n-2"

  Rule: intent is never removed without one of those states or an explicit client policy

    @negative @cap:provision
    Scenario Outline: a non-retryable push answer <answer> drops no intent
      Given client "A" executes SQL "UPDATE notes SET body = 'oat' WHERE id = 'n-1'"
      When the proxy answers the next push of client "A" with status <status> and error code "<code>"
      And client "A" syncs
      Then client "A" still shows the update of row "n-1" with its mutation ID, authored fields and a status of "sealed" or "pending"
      And client "A" still shows the sealed batch that carried it, unchanged

      Examples:
        | answer                | status | code                 |
        | idempotency_conflict  | 409    | idempotency_conflict |
        | invalid_request       | 400    | invalid_request      |
        | auth_required         | 401    | auth_required        |

    @negative @cap:provision @cap:crash
    Scenario Outline: a crash at <point> loses no captured mutation
      Given client "A" will crash at point "<point>"
      And client "A" executes SQL "UPDATE notes SET body = 'oat' WHERE id = 'n-1'"
      When client "A" syncs
      And client "A" is restarted
      And client "A" syncs
      Then the update of row "n-1" is accepted exactly once on the server
      And client "A" shows the update of row "n-1" with status "accepted" and the mutation ID it had before the crash

      Examples:
        | point                        |
        | after_capture_commit         |
        | after_seal_commit            |
        | before_push_send             |
        | after_push_response_received |

    @cap:provision
    Scenario: a rejected record goes away only through the explicit clear operation
      Given client "W" updates row "n-2" of table "notes" from "V2" setting body "rye"
      And client "A" executes SQL "UPDATE notes SET body = 'spelt' WHERE id = 'n-2'"
      And client "A" syncs
      And client "A" syncs
      Then client "A" shows the update of row "n-2" with status "server_rejected"
      When the application on client "A" clears retained rejections
      Then client "A" shows no record for the update of row "n-2"
