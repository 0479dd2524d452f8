@SYNC-MUT-005 @client
Feature: No Duplicate Local Intent
  One thing the user did locally is one mutation: it gets one mutation_id when
  it is captured, keeps it through sealing, retries and restarts, and is
  applied to the local state once. Retried requests, replayed responses and
  the pull echo of the client's own accepted write are all deliveries of
  something the client already knows; none of them may enqueue the intent
  again or run its local transition a second time. The harness counts queue
  records and the client's mutation events while it makes the proxy fail,
  drop and duplicate exchanges, and while the client pulls its own writes
  back.

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

  Rule: one logical local action creates one stable mutation identity

    @cap:provision
    Scenario: one statement that changes one row is one mutation record with one ID end to end
      When client "A" executes SQL "INSERT INTO notes (id, owner_id, body) VALUES ('n-1', 'alice', 'milk')"
      Then client "A" shows exactly one mutation record, an insert of row "n-1" with a lowercase canonical UUID as mutation ID
      When client "A" syncs
      Then the proxy recorded exactly one pushed mutation from client "A", carrying that mutation ID
      And client "A" shows that mutation ID with status "accepted"

    @cap:provision
    Scenario: one statement that changes three rows is three records with three IDs
      Given client "A" executes SQL:
        """
        INSERT INTO notes (id, owner_id, body) VALUES ('n-1', 'alice', 'a')
        INSERT INTO notes (id, owner_id, body) VALUES ('n-2', 'alice', 'b')
        INSERT INTO notes (id, owner_id, body) VALUES ('n-3', 'alice', 'c')
        """
      And client "A" syncs
      When client "A" executes SQL "UPDATE notes SET price = '1' WHERE id IN ('n-1', 'n-2', 'n-3')"
      Then client "A" shows three new update records, one for each of rows "n-1", "n-2" and "n-3", with three distinct mutation IDs

    @cap:provision @cap:crash
    Scenario: the mutation ID survives a restart between capture and send
      Given client "A" executes SQL "INSERT INTO notes (id, owner_id, body) VALUES ('n-1', 'alice', 'milk')"
      And the mutation ID client "A" shows for the insert of row "n-1" is remembered as "M1"
      When client "A" is killed and restarted
      And client "A" syncs
      Then the proxy recorded exactly one pushed mutation from client "A", carrying mutation ID "M1"

  Rule: an intent is not applied or enqueued again because of request replay, response replay or authoritative echo delivery

    @negative @cap:provision
    Scenario Outline: <delivery> adds no record and no second transition
      Given client "A" executes SQL "INSERT INTO notes (id, owner_id, body) VALUES ('n-1', 'alice', 'milk')"
      When <fault>
      And client "A" syncs
      And client "A" syncs
      Then client "A" shows exactly one mutation record for row "n-1", with status "accepted"
      And client "A" emitted exactly one "mutation_accepted" event for that mutation ID
      And the server accepted that mutation ID exactly once and holds row "n-1" at the version of that single acceptance

      Examples:
        | delivery                                | fault                                                                                            |
        | a retried request after a 503           | the proxy answers the next push of client "A" with status 503, code "temporary_unavailable" and Retry-After "1" |
        | a retried request after a 429           | the proxy answers the next push of client "A" with status 429, code "retry_later" and Retry-After "1"           |
        | a replayed response after response loss | the proxy drops the response to the next push of client "A" after the server committed it        |
        | a request delivered to the server twice | the proxy delivers the next push of client "A" to the server twice and hands the client the second, replayed answer |

    @negative @cap:provision @cap:capture
    Scenario: the pull echo of the client's own accepted write is applied by row identity, not captured
      Given client "A" executes SQL "INSERT INTO notes (id, owner_id, body) VALUES ('n-1', 'alice', 'milk')"
      And the capture worker is paused
      And client "A" syncs
      And the record count of client "A" is remembered
      When the capture worker resumes
      And capture has materialized every committed source transaction
      And client "A" pulls
      Then the pull response lists exactly these changes:
        | scope      | table | op     | pk  |
        | user:alice | notes | upsert | n-1 |
      And the record count of client "A" is unchanged
      And client "A" stores, for row "n-1" of table "notes", the server_version of its accepted insert
      When client "A" syncs
      Then the proxy recorded no push from client "A" since the record count was remembered
