@SYNC-CAP-002 @server @internal
Feature: Wal Is The Only Pull Visible Capture Path
  There is one road from a committed row to a client: the worker decodes the
  transaction from the write-ahead log and materializes it. A push answers the
  pusher with its outcome, but it does not publish anything itself; neither does
  a direct SQL write or a membership change. A second road would let pull show
  writes in an order, or with a visibility, that the log does not back. The
  harness pauses the worker, writes through push and through SQL, and checks
  that nothing appears in any pull, rebuild or effect store until the worker
  materializes it, and that every pulled change maps back to a WAL replay
  identity.

  Background:
    Given a registered table "tasks" with columns:
      | column   | type   | key |
      | id       | string | yes |
      | team     | string | no  |
      | title    | string | no  |
    And table "tasks" places each row in scope "team:{team}"
    And user "alice" is assigned scope "team:red"
    And user "bob" is assigned scope "team:red"
    And user "bob" is assigned scope "team:blue"
    And client "A" of user "alice" has connected and rebuilt every assigned scope
    And client "B" of user "bob" has connected and rebuilt every assigned scope

  Rule: a direct write becomes pull-visible only through durable WAL materialization

    @cap:provision @cap:sourceSql @cap:capture
    Scenario: a committed SQL insert stays invisible until the worker materializes it
      Given the capture worker is paused
      When the harness commits on the source database:
        """
        INSERT INTO public.tasks (id, team, title) VALUES ('t-1', 'red', 'direct');
        """
      And client "B" pulls
      Then the response status is 200
      And the pull response lists no change for table "tasks"
      When the capture worker resumes
      And capture has materialized every committed source transaction
      And client "B" pulls
      Then the pull response lists exactly these changes:
        | scope    | table | op     | pk  |
        | team:red | tasks | upsert | t-1 |

    @cap:provision @cap:sourceSql @cap:capture
    Scenario: a committed SQL insert stays invisible while its materialization is written but not committed
      Given the capture worker is held before its materialization commit
      When the harness commits on the source database:
        """
        INSERT INTO public.tasks (id, team, title) VALUES ('t-7', 'red', 'direct');
        """
      And the capture worker holds that transaction before its materialization commit
      And client "B" pulls
      Then the response status is 200
      And the pull response lists no change for table "tasks"
      When the capture worker resumes
      And capture has materialized every committed source transaction
      And client "B" pulls
      Then the pull response lists exactly these changes:
        | scope    | table | op     | pk  |
        | team:red | tasks | upsert | t-7 |

  Rule: an accepted push becomes pull-visible only through durable WAL materialization

    @cap:provision @cap:capture
    Scenario: the pusher gets capture_pending and other clients see nothing until materialization
      Given the capture worker is paused
      When client "A" pushes a batch with:
        | mutation_id                          | operation | table | pk  | team | title  |
        | 2b4c6d8e-1a3f-4c5b-8d7e-9f0a1b2c3d01 | insert    | tasks | t-2 | red  | pushed |
      Then the push outcome of mutation "2b4c6d8e-1a3f-4c5b-8d7e-9f0a1b2c3d01" is "applied"
      When client "A" pulls
      Then the response status is 503 with error code "capture_pending"
      And no scope cursor of client "A" advanced
      When client "A" requests a rebuild of scope "team:red"
      Then the response status is 503 with error code "capture_pending"
      When client "B" pulls
      Then the response status is 200
      And the pull response lists no change for table "tasks"
      When the capture worker resumes
      And capture has materialized every committed source transaction
      And client "A" pulls
      Then the pull response lists exactly these changes:
        | scope    | table | op     | pk  |
        | team:red | tasks | upsert | t-2 |
      When client "B" pulls
      Then the pull response lists exactly these changes:
        | scope    | table | op     | pk  |
        | team:red | tasks | upsert | t-2 |

    @cap:provision @cap:capture
    Scenario: another client sees nothing of an applied push while its materialization is written but not committed
      Given the capture worker is held before its materialization commit
      When client "A" pushes a batch with:
        | mutation_id                          | operation | table | pk  | team | title  |
        | 4d6e8f0a-3c5b-4e7d-8f9a-1b2c3d4e5f08 | insert    | tasks | t-8 | red  | pushed |
      Then the push outcome of mutation "4d6e8f0a-3c5b-4e7d-8f9a-1b2c3d4e5f08" is "applied"
      When the capture worker holds that transaction before its materialization commit
      And client "B" pulls
      Then the response status is 200
      And the pull response lists no change for table "tasks"
      When the capture worker resumes
      And capture has materialized every committed source transaction
      And client "B" pulls
      Then the pull response lists exactly these changes:
        | scope    | table | op     | pk  |
        | team:red | tasks | upsert | t-8 |

  Rule: no second publication path such as a push changelog or a synchronous membership update exists

    @negative @cap:provision @cap:capture @cap:inspect
    Scenario: an applied push writes no effect and no membership edge before materialization
      Given the capture worker is paused
      When client "A" pushes a batch with:
        | mutation_id                          | operation | table | pk  | team | title  |
        | 3c5d7e9f-2b4a-4d6c-9e8f-0a1b2c3d4e02 | insert    | tasks | t-3 | red  | pushed |
      Then the push outcome of mutation "3c5d7e9f-2b4a-4d6c-9e8f-0a1b2c3d4e02" is "applied"
      And server inspection shows the write fence of mutation "3c5d7e9f-2b4a-4d6c-9e8f-0a1b2c3d4e02" with coverage "pending"
      And server inspection shows no pull effect for row "t-3" of table "tasks"
      And server inspection shows no membership edge for row "t-3" of table "tasks"

    @negative @cap:provision @cap:capture @cap:inspect
    Scenario: a write fence stays pending and unpublished until its materialization commits
      Given the capture worker is held before its materialization commit
      When client "A" pushes a batch with:
        | mutation_id                          | operation | table | pk  | team | title  |
        | 5e7f9a1b-4d6c-4f8e-9a0b-2c3d4e5f6a09 | insert    | tasks | t-9 | red  | pushed |
      Then the push outcome of mutation "5e7f9a1b-4d6c-4f8e-9a0b-2c3d4e5f6a09" is "applied"
      When the capture worker holds that transaction before its materialization commit
      Then server inspection shows the write fence of mutation "5e7f9a1b-4d6c-4f8e-9a0b-2c3d4e5f6a09" with coverage "pending"
      And server inspection shows no pull effect for row "t-9" of table "tasks"
      And server inspection shows no membership edge for row "t-9" of table "tasks"
      When the capture worker resumes
      And capture has materialized every committed source transaction
      Then server inspection shows the write fence of mutation "5e7f9a1b-4d6c-4f8e-9a0b-2c3d4e5f6a09" with coverage "materialized"

    @negative @cap:provision @cap:sourceSql @cap:capture
    Scenario: a direct write that moves a row into a scope is not published to that scope early
      Given the harness has committed and capture has materialized:
        """
        INSERT INTO public.tasks (id, team, title) VALUES ('t-4', 'green', 'elsewhere');
        """
      And the capture worker is paused
      When the harness commits on the source database:
        """
        UPDATE public.tasks SET team = 'blue' WHERE id = 't-4';
        """
      And client "B" pulls
      Then the pull response lists no change for table "tasks"

  Rule: every pull-visible effect carries a WAL replay identity

    @cap:provision @cap:sourceSql @cap:capture @cap:inspect
    Scenario: each pulled change maps to a durable transaction and event record
      When the harness commits on the source database:
        """
        INSERT INTO public.tasks (id, team, title) VALUES ('t-5', 'red', 'a'), ('t-6', 'red', 'b');
        """
      And capture has materialized every committed source transaction
      And client "A" pulls
      Then every change in the pull response maps, through server inspection, to a pull effect whose stream generation, commit position and event ordinal name a durable transaction record and event record
