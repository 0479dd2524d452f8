@SYNC-CAP-008 @server @internal
Feature: Commit Ordered Registry Activation
  Registration changes (a new synced field, a new membership rule) are
  themselves source transactions. The worker must interpret every row event
  under the registry generation that was active at that event's place in
  source order: the latest validated generation activated by an earlier
  committed transaction, or by an activation message earlier in the same
  transaction. Activating on a notification, a poll or a restart would let the
  same WAL be read under different rules depending on timing. The harness mixes
  row writes and registrations inside one transaction, sends reload signals
  without activation messages, and checks through server inspection which
  generation each event used, and on the wire which fields and scopes clients
  received.

  Background:
    Given a registered table "tasks" with columns:
      | column   | type   | key |
      | id       | string | yes |
      | owner_id | string | no  |
      | title    | string | no  |
    And table "tasks" places each row in scope "user:{owner_id}"
    And user "alice" is assigned scope "user:alice"
    And user "bob" is assigned scope "user:bob"
    And the harness has committed and capture has materialized:
      """
      INSERT INTO public.tasks (id, owner_id, title) VALUES ('r', 'alice', 'existing');
      """
    And the harness records the active registry generation as "g1"

  Rule: each row event uses the latest validated generation activated by an earlier committed transaction

    @cap:provision @cap:sourceSql @cap:capture @cap:inspect
    Scenario: a write committed after a registration transaction is captured under the new generation
      Given the harness commits on the source database:
        """
        ALTER TABLE public.tasks ADD COLUMN c1 text;
        """
      And the operator commits a registration of table "tasks" that also syncs column "c1" and records its generation as "g2"
      When the harness commits on the source database:
        """
        UPDATE public.tasks SET c1 = 'after' WHERE id = 'r';
        """
      And capture has materialized every committed source transaction
      Then server inspection shows the event of that update captured under generation "g2"

  Rule: an activation message earlier in the same transaction activates its generation for the events after it, and only for those

    @cap:provision @cap:sourceSql @cap:capture @cap:inspect
    Scenario: events on either side of in-transaction activations use the generation in force at their position
      Given the harness commits on the source database:
        """
        ALTER TABLE public.tasks ADD COLUMN c1 text;
        ALTER TABLE public.tasks ADD COLUMN c2 text;
        """
      When the harness commits one source transaction with these steps:
        | step | action                                                                                  |
        | 1    | UPDATE public.tasks SET owner_id = 'bob' WHERE id = 'r'                                |
        | 2    | INSERT INTO public.tasks (id, owner_id, title) VALUES ('i', 'alice', 'new')            |
        | 3    | register a generation "g2" of table "tasks" that also syncs column "c1"                |
        | 4    | UPDATE public.tasks SET c1 = 'x' WHERE id = 'r'                                        |
        | 5    | register a generation "g3" whose membership puts each row in scope "user:{title}"      |
        | 6    | UPDATE public.tasks SET c2 = 'y' WHERE id = 'i'                                        |
      And capture has materialized every committed source transaction
      Then server inspection shows the events of that transaction captured under these generations:
        | step | generation |
        | 1    | g1         |
        | 2    | g1         |
        | 4    | g2         |
        | 6    | g3         |
      And server inspection shows no active quarantine record
      And the membership edges after that transaction are those of generation "g3" evaluated on the final projected rows

    @cap:provision @cap:sourceSql @cap:capture @cap:inspect
    Scenario: a worker killed while materializing a transaction with activations reproduces the same generation choices
      Given the capture worker is held before its materialization commit
      When the harness commits one source transaction with these steps:
        | step | action                                                                     |
        | 1    | UPDATE public.tasks SET title = 'before' WHERE id = 'r'                    |
        | 2    | register a generation "g2" whose membership puts each row in scope "user:bob" |
        | 3    | UPDATE public.tasks SET title = 'after' WHERE id = 'r'                     |
      And the capture worker is killed
      And the capture worker is restarted
      And capture has materialized every committed source transaction
      Then server inspection shows the events of that transaction captured under these generations:
        | step | generation |
        | 1    | g1         |
        | 3    | g2         |

  Rule: activation by notification alone is a violation

    @negative @cap:provision @cap:sourceSql @cap:capture @cap:inspect
    Scenario Outline: a validated pending generation without an activation message is not used after <signal>
      Given the harness stores a validated pending generation "g2" of table "tasks" that also syncs column "title2" without emitting its activation message
      When <signal>
      And the harness commits on the source database:
        """
        UPDATE public.tasks SET title = 'probe' WHERE id = 'r';
        """
      And capture has materialized every committed source transaction
      Then server inspection shows the event of that update captured under generation "g1"
      And server inspection shows the active registry generation equal to "g1"

      Examples:
        | signal                                                     |
        | the harness sends NOTIFY on every channel the server listens on |
        | the capture worker is restarted                            |
        | the capture worker completes 3 polls                       |

  Rule: a generation switch at any position other than an activation message is a violation

    @negative @cap:provision @cap:sourceSql @cap:capture @cap:inspect
    Scenario: an activation message for an unvalidated generation poisons the stream instead of switching
      Given the harness stores an unvalidated pending generation "g2" of table "tasks"
      When the harness commits on the source database an activation message for generation "g2"
      And the capture worker completes 3 polls
      Then server inspection shows one active quarantine record with failure class "validation_failed"
      And server inspection shows the active registry generation equal to "g1"

    @negative @cap:provision @cap:sourceSql @cap:capture @cap:inspect
    Scenario: events committed before the registration transaction keep the old generation even when materialized after it
      Given the capture worker is paused
      When the harness commits on the source database:
        """
        UPDATE public.tasks SET title = 'early' WHERE id = 'r';
        """
      And the operator commits a registration of table "tasks" whose membership puts each row in scope "user:bob" and records its generation as "g2"
      And the capture worker resumes
      And capture has materialized every committed source transaction
      Then server inspection shows the event of the update to "early" captured under generation "g1"
