@SYNC-MUT-023 @client
Feature: Pre Wire Mutation Dependency Resolution
  Several local writes to the same row can pile up before anything is sent.
  While none of them is sealed, the client folds the chain into the one wire
  mutation ADR 002 prescribes (insert plus updates become one insert, updates
  become one update from the original base, updates plus a delete become one
  delete, insert plus delete becomes nothing) and never folds a delete
  followed by a write. When the first write is already sealed or in flight, a
  later write of the row waits for its outcome: an applied predecessor gives
  it its base, a rejected one blocks it. Every original action stays on
  record and linked, no write is ever sent with a base_version the server did
  not issue, and an insert deleted before sealing never reaches the server.
  The harness writes chains through SQL, pauses the proxy to keep a
  predecessor in flight, and checks the wire, the server and the client's
  records.

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
    And client "W" of user "alice" has connected
    And the server holds these "notes" rows, created by client "W":
      | id  | owner_id | body  | version |
      | n-1 | alice    | milk  | V1      |
    And capture has materialized every committed source transaction
    And client "A" of user "alice" has connected and rebuilt every assigned scope

  Rule: an unsent same-row chain is normalized or blocked exactly as ADR 002 defines

    @cap:provision
    Scenario Outline: the unsent chain <chain> goes on the wire as <wire>
      When client "A" executes SQL:
        """
        <statements>
        """
      And client "A" syncs
      Then the proxy recorded, for row "<pk>", exactly <wire>
      And client "A" shows the original records of row "<pk>" with statuses <original statuses>

      Examples:
        | chain                   | pk  | statements                                                                                                                                                                   | wire                                                                                          | original statuses                                           |
        | insert, update, update  | n-2 | INSERT INTO notes (id, owner_id, body) VALUES ('n-2', 'alice', 'a')\nUPDATE notes SET body = 'b' WHERE id = 'n-2'\nUPDATE notes SET price = '2' WHERE id = 'n-2'             | one insert with a new mutation_id, no base_version and columns owner_id "alice", body "b", price "2" | superseded_before_send, superseded_before_send, superseded_before_send |
        | update, update          | n-1 | UPDATE notes SET body = 'oat' WHERE id = 'n-1'\nUPDATE notes SET price = '3' WHERE id = 'n-1'                                                                                  | one update with a new mutation_id, base_version "V1" and columns body "oat", price "3"       | superseded_before_send, superseded_before_send              |
        | update, update, delete  | n-1 | UPDATE notes SET body = 'oat' WHERE id = 'n-1'\nUPDATE notes SET price = '3' WHERE id = 'n-1'\nDELETE FROM notes WHERE id = 'n-1'                                              | one delete with a new mutation_id, base_version "V1" and no columns                          | superseded_before_send, superseded_before_send, superseded_before_send |
        | delete, update          | n-1 | DELETE FROM notes WHERE id = 'n-1'\nUPDATE notes SET body = 'oat' WHERE id = 'n-1'                                                                          | one delete with base_version "V1" and the delete's own mutation_id                           | accepted, blocked_by_predecessor                            |

    @cap:provision
    Scenario: a write that follows a sealed, in-flight predecessor waits and then uses the returned version
      Given client "A" executes SQL "UPDATE notes SET body = 'oat' WHERE id = 'n-1'"
      And the proxy holds the next push response to client "A"
      And client "A" syncs in the background
      When client "A" executes SQL "UPDATE notes SET price = '3' WHERE id = 'n-1'"
      Then client "A" shows the price update with no base version and a dependsOnMutationID naming the body update
      When the proxy releases the held response
      And client "A" syncs
      Then the second push request of client "A" carries the price update with the mutation_id it was captured with and base_version equal to the server_version returned for the body update

    @cap:provision
    Scenario: a write that follows a rejected predecessor is blocked and never sent
      Given client "W" updates row "n-1" of table "notes" from "V1" setting body "rye"
      And client "A" executes SQL "UPDATE notes SET body = 'oat' WHERE id = 'n-1'"
      And the proxy holds the next push response to client "A"
      And client "A" syncs in the background
      When client "A" executes SQL "UPDATE notes SET price = '3' WHERE id = 'n-1'"
      And the proxy releases the held response
      And client "A" syncs
      And client "A" syncs
      Then client "A" shows the price update with status "blocked_by_predecessor" and a dependsOnMutationID naming the body update
      And the proxy recorded no push request carrying the price update

  Rule: every original local action stays linked and inspectable

    @cap:provision @cap:crash
    Scenario: the originals of a normalized chain point to the mutation that replaced them, across a restart
      When client "A" executes SQL:
        """
        INSERT INTO notes (id, owner_id, body) VALUES ('n-2', 'alice', 'a')
        UPDATE notes SET body = 'b' WHERE id = 'n-2'
        """
      And client "A" syncs
      And client "A" is killed and restarted
      Then client "A" shows both original records of row "n-2" with status "superseded_before_send", their own mutation IDs and authored fields, and a normalizedMutationID equal to the mutation_id of the insert the proxy recorded
      And client "A" shows the record with that normalized mutation ID with status "accepted"

  Rule: no dependent mutation is sent with a fabricated base version

    @negative @property @cap:provision
    Scenario: for many generated write sequences every base_version on the wire was issued by the server for that row
      When the harness runs 50 generated rounds of 1 to 12 local inserts, updates and deletes on rows "n-1" to "n-4" through client "A", with syncs, held push responses and conflicting updates from client "W" interleaved at random
      Then every update or delete the proxy recorded from client "A" has a base_version that the server earlier returned for that same row in a push outcome, pull change or rebuild record delivered to client "A"
      And no update or delete of client "A" was sent while an earlier mutation of the same row was sealed without an outcome

  Rule: an insert followed by a delete before sealing creates no transient server row

    @negative @cap:provision
    Scenario: an inserted and deleted row never reaches the server and leaves no fence
      When client "A" executes SQL:
        """
        INSERT INTO notes (id, owner_id, body) VALUES ('n-9', 'alice', 'temp')
        UPDATE notes SET body = 'temp2' WHERE id = 'n-9'
        DELETE FROM notes WHERE id = 'n-9'
        """
      And client "A" syncs
      Then the proxy recorded no mutation of row "n-9" from client "A"
      And client "A" shows the three records of row "n-9" with status "cancelled_before_send"
      When client "W" pushes a batch with:
        | mutation_id                          | operation | table | pk  | base_version | owner_id | body  |
        | 23a00001-0000-4000-8000-000000000001 | insert    | notes | n-9 |              | alice    | fresh |
      Then the push outcome of mutation "23a00001-0000-4000-8000-000000000001" is "applied"
