@SYNC-MUT-024 @client
Feature: Atomic Group Capture And Selection
  An application can ask for several local writes to reach the server as one
  all-or-nothing unit by making them inside an atomic write transaction. The
  client stamps every mutation captured in that transaction with the
  transaction's group identity and no other mutation with it, refuses and
  rolls back a group that breaks a commit-time rule (a write after a delete of
  the same row, more than 1000 mutations, a mutation over 65,536 normalized
  octets or 256 columns, a worst-case request over 1,048,576 octets), and
  sends each group alone, complete, in one sealed batch with "atomic": true.
  If one unsent member is blocked by a failed predecessor, all unsent members
  are blocked together. The harness writes groups through the client's atomic
  write call, inspects group IDs and statuses, and checks every push request
  the proxy records.

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

  Rule: every mutation captured in one atomic write transaction carries that transaction's group identity, and no other mutation carries it

    @cap:provision
    Scenario: group members share one group ID that nothing else has
      When client "A" runs an atomic write with statements:
        """
        INSERT INTO notes (id, owner_id, body) VALUES ('n-2', 'alice', 'a')
        INSERT INTO notes (id, owner_id, body) VALUES ('n-3', 'alice', 'b')
        """
      And client "A" executes SQL "INSERT INTO notes (id, owner_id, body) VALUES ('n-4', 'alice', 'c')"
      And client "A" runs an atomic write with statements:
        """
        INSERT INTO notes (id, owner_id, body) VALUES ('n-5', 'alice', 'd')
        """
      Then client "A" shows the inserts of rows "n-2" and "n-3" with one and the same group ID, a lowercase canonical UUID
      And client "A" shows the insert of row "n-4" with no group ID
      And client "A" shows the insert of row "n-5" with a group ID different from that of row "n-2"

  Rule: a group that fails a commit-time rule is rejected and rolled back

    @cap:provision
    Scenario Outline: a group that <breaks> is refused with reason "<reason>" and leaves nothing behind
      Given the record count of client "A" is remembered
      When client "A" runs an atomic write with <statements>
      Then the atomic write fails with error code "atomic_group_invalid" and reason "<reason>"
      And client "A" query "SELECT count(*) AS n FROM notes WHERE id <> 'n-1'" returns:
        | n |
        | 0 |
      And client "A" query "SELECT body FROM notes WHERE id = 'n-1'" returns:
        | body |
        | milk |
      And the record count of client "A" is unchanged

      Examples:
        | breaks                                        | reason                | statements                                                                                                   |
        | writes a row after deleting it                | deleteFollowedByWrite | the statements "DELETE FROM notes WHERE id = 'n-1'" and "UPDATE notes SET body = 'x' WHERE id = 'n-1'" |
        | holds 1001 mutations                          | tooManyMutations      | 1001 inserts of rows "g-0001" to "g-1001" with body "x"                                                       |
        | holds a mutation of 65,537 normalized octets  | mutationTooLarge      | one insert of row "g-1" whose body is sized so that its normalized mutation is 65,537 octets                 |
        | needs a request over 1,048,576 octets         | requestTooLarge       | 20 inserts of rows "g-01" to "g-20" with bodies of 60,000 characters each                                    |

    @cap:provision
    Scenario Outline: a group at the limit <limit> commits
      When client "A" runs an atomic write with <statements>
      Then the atomic write succeeds
      And client "A" shows <count> records sharing one group ID

      Examples:
        | limit                                  | statements                                                                                   | count |
        | of 1000 mutations                      | 1000 inserts of rows "g-0001" to "g-1000" with body "x"                                      | 1000  |
        | of 65,536 normalized octets            | one insert of row "g-1" whose body is sized so that its normalized mutation is 65,536 octets | 1     |

    @cap:provision
    Scenario: a statement that fails inside the group rolls back the whole group
      When client "A" runs an atomic write with statements:
        """
        INSERT INTO notes (id, owner_id, body) VALUES ('n-2', 'alice', 'a')
        INSERT INTO notes (id, owner_id, body) VALUES ('n-1', 'alice', 'duplicate key')
        """
      Then the atomic write fails
      And client "A" query "SELECT count(*) AS n FROM notes WHERE id = 'n-2'" returns:
        | n |
        | 0 |
      And client "A" shows no mutation record

  Rule: a group is sent only as one complete sealed batch with "atomic": true that holds no other mutation

    @cap:provision
    Scenario: with batch size 1 the group still travels whole and alone
      Given client "A" is opened with push batch size 1
      When client "A" executes SQL "INSERT INTO notes (id, owner_id, body) VALUES ('u-1', 'alice', 'u1')"
      And client "A" executes SQL "INSERT INTO notes (id, owner_id, body) VALUES ('u-2', 'alice', 'u2')"
      And client "A" runs an atomic write with statements:
        """
        INSERT INTO notes (id, owner_id, body) VALUES ('g-1', 'alice', 'g1')
        INSERT INTO notes (id, owner_id, body) VALUES ('g-2', 'alice', 'g2')
        INSERT INTO notes (id, owner_id, body) VALUES ('g-3', 'alice', 'g3')
        """
      And client "A" executes SQL "INSERT INTO notes (id, owner_id, body) VALUES ('u-3', 'alice', 'u3')"
      And client "A" syncs
      Then the proxy recorded these push requests from client "A", in this order:
        | rows          | atomic |
        | u-1           | absent |
        | u-2           | absent |
        | g-1, g-2, g-3 | true   |
        | u-3           | absent |

    @cap:provision
    Scenario: with batch size 10 ungrouped writes before and after the group are batched apart from it
      Given client "A" is opened with push batch size 10
      When client "A" executes SQL "INSERT INTO notes (id, owner_id, body) VALUES ('u-1', 'alice', 'u1')"
      And client "A" executes SQL "INSERT INTO notes (id, owner_id, body) VALUES ('u-2', 'alice', 'u2')"
      And client "A" runs an atomic write with statements:
        """
        INSERT INTO notes (id, owner_id, body) VALUES ('g-1', 'alice', 'g1')
        INSERT INTO notes (id, owner_id, body) VALUES ('g-2', 'alice', 'g2')
        INSERT INTO notes (id, owner_id, body) VALUES ('g-3', 'alice', 'g3')
        """
      And client "A" executes SQL "INSERT INTO notes (id, owner_id, body) VALUES ('u-3', 'alice', 'u3')"
      And client "A" syncs
      Then the proxy recorded these push requests from client "A", in this order:
        | rows          | atomic |
        | u-1, u-2      | absent |
        | g-1, g-2, g-3 | true   |
        | u-3           | absent |

  Rule: when one unsent group member becomes blocked_by_predecessor, every unsent member of the group becomes blocked

    @cap:provision
    Scenario: a rejected predecessor of one member blocks the whole group, which is never sent
      Given client "W" updates row "n-1" of table "notes" from "V1" setting body "rye"
      And client "A" executes SQL "UPDATE notes SET body = 'oat' WHERE id = 'n-1'"
      And the proxy holds the next push response to client "A"
      And client "A" syncs in the background
      When client "A" runs an atomic write with statements:
        """
        UPDATE notes SET price = '3' WHERE id = 'n-1'
        INSERT INTO notes (id, owner_id, body) VALUES ('n-6', 'alice', 'new')
        """
      And the proxy releases the held response
      And client "A" syncs
      Then client "A" shows both group members with status "blocked_by_predecessor"
      And the statuses of both group members changed in the same local transaction
      And the proxy recorded no push request carrying either group member

  Rule: a split group, a mixed batch or a committed invalid group is never observed

    @negative @property @cap:provision
    Scenario: for many generated workloads every push request is either one whole group or has no grouped mutation
      When the harness runs 50 generated rounds through client "A" mixing plain writes and atomic writes of 1 to 5 statements on rows "n-1" to "n-20", with push batch sizes from 1 to 5 and random syncs
      Then every push request the proxy recorded from client "A" with "atomic": true carries exactly all members of one group and nothing else
      And every push request the proxy recorded from client "A" without "atomic" carries no mutation that has a group ID
      And no group's members were split across push requests
      And every atomic write that failed left no record and no row behind
