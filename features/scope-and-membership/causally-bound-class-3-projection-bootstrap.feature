@SYNC-SCOPE-006 @server @internal
Feature: Causally Bound Class 3 Projection Bootstrap
  A Class 3 schema change (a new table with existing rows, a field with
  historical values, a new dependency or projection) needs server state that
  capture never recorded. Reading it from live tables would mix a moment that
  matches no stream position with WAL-ordered history. The server instead
  creates one permanent candidate logical slot, imports its exported snapshot,
  stages every projection the change needs, replays every later transaction up
  to a barrier the main worker also reaches, and then activates the manifest,
  the generations, the projections and the invalidation of affected scopes in
  one step. Until then connect keeps answering with the previous manifest. The
  harness publishes a Class 3 change while writing, holds and kills the
  bootstrap at each phase, and checks connect actions, rebuild contents and
  the bootstrap record.

  Background:
    Given a registered table "tasks" with columns:
      | column   | type   | key |
      | id       | string | yes |
      | owner_id | string | no  |
      | title    | string | no  |
    And table "tasks" places each row in scope "user:{owner_id}"
    And user "alice" is assigned scope "user:alice"
    And the source table "public.tasks" also has column "priority" of SQL type "integer" that is not synced
    And the harness has committed and capture has materialized:
      """
      INSERT INTO public.tasks (id, owner_id, title, priority) VALUES ('t-1', 'alice', 'old', 3), ('t-2', 'alice', 'old', 5);
      """
    And client "A" of user "alice" has connected and rebuilt every assigned scope
    And the harness records the current manifest reference as "before"

  Rule: a Class 3 change that needs absent projections bootstraps from one permanent candidate slot and its imported exported snapshot

    @cap:provision @cap:schema @cap:capture @cap:inspect
    Scenario: the bootstrap record names one permanent pgoutput slot of this database and no new stream generation
      Given the harness records the stream generation that inspection reports as "stream_before"
      When the operator publishes a "class_3" manifest that registers the existing column "priority" of type "int" with its historical values in table "tasks", affecting scope "user:alice"
      And the bootstrap runs to activation
      Then server inspection shows one projection bootstrap record whose candidate slot was logical, "pgoutput", not temporary and in the configured database, with an exported snapshot name and a consistent point
      And server inspection shows a stream generation equal to "stream_before"
      And server inspection shows the active slot pointer unchanged by the bootstrap

  Rule: complete pending source, dependency, version, membership and integrity projections are staged

    @cap:provision @cap:schema @cap:capture
    Scenario: after activation a rebuild carries the historical values of the new field
      When the operator publishes a "class_3" manifest that registers the existing column "priority" of type "int" with its historical values in table "tasks", affecting scope "user:alice"
      And the bootstrap runs to activation
      And client "A" connects presenting the "before" schema reference
      Then the connect response has schema action "rebuild_local"
      And the connect response lists "affected_scopes" exactly as "user:alice"
      When client "A" rebuilds scope "user:alice" to its final page
      Then the rebuild pages hold row "t-1" of table "tasks" with priority 3 and row "t-2" with priority 5
      And the final scope checksum of "user:alice" verifies against the rebuilt rows

  Rule: every later transaction is replayed through a barrier that the main worker also reaches

    @cap:provision @cap:schema @cap:sourceSql @cap:capture @cap:inspect
    Scenario: writes during the bootstrap are in the activated projections
      When the operator publishes a "class_3" manifest that registers the existing column "priority" of type "int" with its historical values in table "tasks", affecting scope "user:alice"
      And the harness holds the bootstrap after its baseline is staged
      And the harness commits on the source database:
        """
        UPDATE public.tasks SET priority = 9 WHERE id = 't-1';
        INSERT INTO public.tasks (id, owner_id, title, priority) VALUES ('t-3', 'alice', 'during', 1);
        """
      And the harness releases the bootstrap and it runs to activation
      Then server inspection shows the bootstrap activation barrier equal to a durable "transaction_end" of the main worker
      When client "A" connects presenting the "before" schema reference
      And client "A" rebuilds scope "user:alice" to its final page
      Then the rebuild pages hold rows "t-1" with priority 9, "t-2" with priority 5 and "t-3" with priority 1 of table "tasks"

  Rule: the manifest, generations, projections and affected-scope invalidation activate atomically

    @cap:provision @cap:schema @cap:capture
    Scenario: connect keeps the old manifest until activation, then shows the new one with the invalidation
      When the operator publishes a "class_3" manifest that registers the existing column "priority" of type "int" with its historical values in table "tasks", affecting scope "user:alice"
      And the harness holds the bootstrap after its baseline is staged
      And client "A" connects presenting the "before" schema reference
      Then the connect response has schema action "none"
      When client "A" pulls
      Then the response status is 200
      And the pull response lists no scope in "rebuild"
      When the harness releases the bootstrap and it runs to activation
      And client "A" connects presenting the "before" schema reference
      Then the connect response has schema action "rebuild_local"
      And the connect response lists "affected_scopes" exactly as "user:alice"

  Rule: early manifest exposure, an independent live query, omitted catch-up, partial activation, mismatched barriers or recovery from another slot is a violation

    @negative @cap:provision @cap:schema @cap:capture @cap:inspect
    Scenario Outline: an operator killed during phase "<phase>" never leaves a partly activated change
      When the operator publishes a "class_3" manifest that registers the existing column "priority" of type "int" with its historical values in table "tasks", affecting scope "user:alice"
      And the harness holds the bootstrap at phase "<phase>"
      And the bootstrap coordinator is killed
      And client "A" connects presenting the "before" schema reference
      Then the connect response has schema action "none"
      When the bootstrap is resumed or restarted and runs to activation
      Then the activated bootstrap used either the candidate slot and consistent point recorded before the kill or a new candidate slot whose record is complete
      And no candidate slot marked aborted was read after the kill
      When client "A" connects presenting the "before" schema reference
      Then the connect response has schema action "rebuild_local"

      Examples:
        | phase           |
        | preparing       |
        | baseline_staged |
        | catching_up     |

    @negative @cap:provision @cap:schema @cap:sourceSql @cap:capture
    Scenario: a value changed after the snapshot but before the barrier arrives through catch-up, not from a live read
      When the operator publishes a "class_3" manifest that registers the existing column "priority" of type "int" with its historical values in table "tasks", affecting scope "user:alice"
      And the harness holds the bootstrap after its candidate slot is created
      And the harness commits on the source database:
        """
        UPDATE public.tasks SET priority = 7 WHERE id = 't-2';
        UPDATE public.tasks SET priority = 8 WHERE id = 't-2';
        """
      And the harness releases the bootstrap and it runs to activation
      And client "A" connects presenting the "before" schema reference
      And client "A" rebuilds scope "user:alice" to its final page
      Then the rebuild pages hold row "t-2" of table "tasks" with priority 8
      When client "A" pulls
      Then the pull response lists no change for table "tasks"

    @negative @cap:provision @cap:schema @cap:capture @cap:inspect
    Scenario: activation with a barrier the main worker has not made durable is refused
      When the operator publishes a "class_3" manifest that registers the existing column "priority" of type "int" with its historical values in table "tasks", affecting scope "user:alice"
      And the capture worker is paused
      And the harness holds the bootstrap in phase "catching_up" with a barrier past the main worker's durable processed boundary
      And the operator asks the bootstrap to activate
      And client "A" connects presenting the "before" schema reference
      Then the activation waits or is refused
      And the connect response has schema action "none"
