@SYNC-PROTO-011 @server @client
Feature: Canonical Operation Vocabulary
  The two directions of sync speak different, closed vocabularies. A client
  states intent with exactly insert, update or delete, and each has a fixed
  meaning against the row it names: insert needs the row to be absent, update
  and delete need the live row at the given base version. The server reports
  state with exactly upsert or delete. Words from the other direction, loose
  spellings and convenience verbs (create, upsert, merge, a capitalised
  Insert) are not part of the protocol, and no operation may quietly bring a
  deleted row back or turn an update of a missing row into an insert.

  The harness sends pushes with operations outside the vocabulary and expects
  a whole-request 400 that leaves no trace (the same batch_id then runs
  normally), pushes against absent and deleted rows and expects the
  conflict outcomes instead of resurrection, checks every op the server emits
  on pull, and gives a client pull pages carrying push verbs to see it refuse
  them.

  Background:
    Given a registered table "tasks" with columns:
      | column     | type     | key | nullable |
      | id         | string   | yes | no       |
      | owner_id   | string   | no  | no       |
      | title      | string   | no  | no       |
      | deleted_at | datetime | no  | yes      |
    And table "tasks" places each row in scope "user:{owner_id}"
    And table "tasks" marks deletion with column "deleted_at"
    And client "A" of user "alice" has connected and rebuilt every assigned scope

  @cap:provision
  Rule: push accepts only insert, update and delete

    Scenario: the three push operations are applied
      When client "A" pushes a batch with:
        | mutation_id                          | operation | table | pk  | owner_id | title |
        | a0b1c2d3-e4f5-4a06-8b17-c2d3e4f5a601 | insert    | tasks | t-1 | alice    | one   |
      And client "A" pushes a batch with:
        | mutation_id                          | operation | table | pk  | base_version | title |
        | a0b1c2d3-e4f5-4a06-8b17-c2d3e4f5a602 | update    | tasks | t-1 | current      | two   |
      And client "A" pushes a batch with:
        | mutation_id                          | operation | table | pk  | base_version |
        | a0b1c2d3-e4f5-4a06-8b17-c2d3e4f5a603 | delete    | tasks | t-1 | current      |
      Then the push outcomes of mutations "a0b1c2d3-e4f5-4a06-8b17-c2d3e4f5a601", "a0b1c2d3-e4f5-4a06-8b17-c2d3e4f5a602" and "a0b1c2d3-e4f5-4a06-8b17-c2d3e4f5a603" are "applied"

    @negative
    Scenario Outline: a push whose op is outside the vocabulary is refused whole and leaves no ledger entry
      When client "A" sends a push request with batch_id "b1c2d3e4-f5a6-4b07-9c18-d3e4f5a6b701" whose mutation has "/op" set to <op>
      Then the response status is 400 with error code "invalid_request"
      And the response has no member "/accepted" and no member "/rejected"
      When client "A" sends a push request with batch_id "b1c2d3e4-f5a6-4b07-9c18-d3e4f5a6b701" whose mutation is a valid insert of row "t-2"
      Then the response status is 200
      And the push outcome of that mutation is "applied"

      Examples:
        | op       |
        | "create" |
        | "upsert" |
        | "Insert" |
        | "INSERT" |
        | "merge"  |
        | "undelete" |
        | ""       |
        | null     |
        | 1        |

    @negative
    Scenario: a push mutation without an op is refused whole
      When client "A" sends its next push request with "/mutations/0/op" removed
      Then the response status is 400 with error code "invalid_request"
      And no durable state changed on the server

  @cap:provision
  Rule: pull emits only upsert and delete

    @cap:sourceSql
    Scenario: inserts, updates, soft deletes and hard deletes all reach pull as upsert or delete
      When the harness commits on the source database:
        """
        INSERT INTO public.tasks (id, owner_id, title) VALUES ('t-3', 'alice', 'new'), ('t-4', 'alice', 'doomed'), ('t-5', 'alice', 'hidden');
        """
      And capture has materialized every committed source transaction
      And client "A" pulls
      Then the pull response lists exactly these changes:
        | scope      | table | op     | pk  |
        | user:alice | tasks | upsert | t-3 |
        | user:alice | tasks | upsert | t-4 |
        | user:alice | tasks | upsert | t-5 |
      When the harness commits on the source database:
        """
        UPDATE public.tasks SET title = 'renamed' WHERE id = 't-3';
        UPDATE public.tasks SET deleted_at = '2026-09-01T08:00:00Z' WHERE id = 't-4';
        DELETE FROM public.tasks WHERE id = 't-5';
        """
      And capture has materialized every committed source transaction
      And client "A" pulls
      Then every change in the pull response has "op" equal to "upsert" or "delete"
      And the change for row "t-3" has op "upsert"
      And the changes for rows "t-4" and "t-5" have op "delete"

    @cap:sourceSql
    Scenario: no pull change or rebuild record a client receives carries another op
      Given the harness has committed and capture has materialized:
        """
        INSERT INTO public.tasks (id, owner_id, title) VALUES ('t-10', 'alice', 'kept'), ('t-11', 'alice', 'soft'), ('t-12', 'alice', 'hard');
        """
      And client "A" syncs
      When the harness commits on the source database:
        """
        UPDATE public.tasks SET title = 'changed' WHERE id = 't-10';
        UPDATE public.tasks SET deleted_at = '2026-09-01T08:00:00Z' WHERE id = 't-11';
        DELETE FROM public.tasks WHERE id = 't-12';
        """
      And capture has materialized every committed source transaction
      And client "A" syncs
      And client "B" of user "alice" has connected and rebuilt every assigned scope
      Then across every pull response recorded in this scenario, every change has "op" equal to "upsert" or "delete"
      And no rebuild record recorded in this scenario has an "op" member

    @negative
    Scenario Outline: a client refuses a pull page carrying a push verb
      Given the harness has committed and capture has materialized:
        """
        INSERT INTO public.tasks (id, owner_id, title) VALUES ('t-6', 'alice', 'arrives');
        """
      And the proxy will set "/changes/0/op" to <op> in the next pull response to client "A"
      When client "A" syncs
      Then the sync of client "A" ends with completion "error"
      And client "A" has no row "t-6" in table "tasks"
      And the cursor client "A" stores for scope "user:alice" is unchanged

      Examples:
        | op       |
        | "insert" |
        | "update" |
        | "create" |
        | "Upsert" |

  @cap:provision
  Rule: no operation resurrects a deleted row or turns into an implicit insert

    @negative
    Scenario Outline: pushes against a deleted row report row_deleted and leave the row deleted
      Given client "A" has pushed an insert of row "t-7" and a delete of it, and holds the delete's server version
      When client "A" pushes a batch with:
        | mutation_id   | operation   | table | pk  | base_version   | title  |
        | <mutation_id> | <operation> | tasks | t-7 | <base_version> | <title> |
      Then the push outcome of mutation "<mutation_id>" is "conflict" with code "row_deleted"
      And the row "t-7" of table "tasks" is still deleted at the source

      Examples:
        | mutation_id                          | operation | base_version | title |
        | c2d3e4f5-a6b7-4c08-8d19-e4f5a6b7c801 | insert    |              | back  |
        | c2d3e4f5-a6b7-4c08-8d19-e4f5a6b7c802 | update    | current      | back  |
        | c2d3e4f5-a6b7-4c08-8d19-e4f5a6b7c803 | delete    | current      |       |

    @negative
    Scenario Outline: an update or delete of an absent row reports row_not_found and creates nothing
      When client "A" pushes a batch with:
        | mutation_id   | operation   | table | pk  | base_version | title   |
        | <mutation_id> | <operation> | tasks | t-8 | sv-guess     | <title> |
      Then the push outcome of mutation "<mutation_id>" is "conflict" with code "row_not_found"
      And the outcome carries no server_row, no row_checksum and no server_version
      And the source table "tasks" has no row "t-8"

      Examples:
        | mutation_id                          | operation | title   |
        | d3e4f5a6-b7c8-4d09-9e1a-f5a6b7c8d901 | update    | created |
        | d3e4f5a6-b7c8-4d09-9e1a-f5a6b7c8d902 | delete    |         |

  Rule: a client sends only insert, update and delete

    @cap:provision
    Scenario: every operation a client sends is from the push vocabulary
      When client "A" executes SQL:
        """
        INSERT INTO tasks (id, owner_id, title) VALUES ('t-9', 'alice', 'one');
        """
      And client "A" syncs
      And client "A" executes SQL:
        """
        UPDATE tasks SET title = 'two' WHERE id = 't-9';
        """
      And client "A" syncs
      And client "A" executes SQL:
        """
        DELETE FROM tasks WHERE id = 't-9';
        """
      And client "A" syncs
      Then every mutation in every push request client "A" sent has "op" equal to "insert", "update" or "delete"
      And the push requests client "A" sent for row "t-9" carried, in order, ops "insert", "update" and "delete"
