@SYNC-SCOPE-005 @server
Feature: Staged Membership Backfill
  Changing a membership rule means computing new edges for every existing row.
  If the server rewrote live edges in place, clients pulling or rebuilding in
  the meantime would see a mix of old and new membership, and cursors still
  bound to the old generation would have nothing to be judged against. The new
  edge set is therefore built on the side from one snapshot, caught up with
  every later transaction to a boundary the main worker has also reached, and
  activated atomically; the prior generation stays available for as long as
  open cursors and rebuild sessions need it. The harness holds the backfill at
  points before activation, keeps pulling, rebuilding and writing, and checks
  that clients see the complete old generation until the switch and the
  complete new one after it.

  Background:
    Given a registered table "tasks" with columns:
      | column   | type   | key |
      | id       | string | yes |
      | owner_id | string | no  |
      | team     | string | no  |
    And table "tasks" places each row in scope "user:{owner_id}"
    And user "alice" is assigned scope "user:alice"
    And user "alice" is assigned scope "team:red"
    And the harness has committed and capture has materialized:
      """
      INSERT INTO public.tasks (id, owner_id, team) VALUES ('t-1', 'alice', 'red'), ('t-2', 'alice', 'blue'), ('t-3', 'bob', 'red'), ('t-4', 'bob', 'red');
      """
    And client "A" of user "alice" has connected and rebuilt every assigned scope
    And the harness records the cursors client "A" inspects as "old"

  Rule: the complete staged edge set is built and caught up before one atomic activation

    @cap:provision @cap:sourceSql @cap:capture
    Scenario: while the backfill is held, pull and rebuild serve the old generation
      When the operator starts a membership reconfiguration of "tasks" to scopes "user:{owner_id},team:{team}" with backfill batch size 1
      And the harness holds the backfill after its first batch
      And client "A" rebuilds scope "team:red" to its final page
      Then the rebuild pages hold exactly these records:
        | table | pk |
      When client "A" rebuilds scope "user:alice" to its final page
      Then the rebuild pages hold exactly these records:
        | table | pk  |
        | tasks | t-1 |
        | tasks | t-2 |
      When client "A" pulls presenting the "old" cursors
      Then the response status is 200
      And the pull response lists no change for table "tasks"
      And the pull response lists no scope in "rebuild"

    @cap:provision @cap:sourceSql @cap:capture
    Scenario: writes committed during the backfill are part of the activated generation
      When the operator starts a membership reconfiguration of "tasks" to scopes "user:{owner_id},team:{team}" with backfill batch size 1
      And the harness holds the backfill after its first batch
      And the harness commits on the source database:
        """
        INSERT INTO public.tasks (id, owner_id, team) VALUES ('t-5', 'carol', 'red');
        UPDATE public.tasks SET team = 'blue' WHERE id IN ('t-1', 't-4');
        """
      And capture has materialized every committed source transaction
      And the harness releases the backfill and the reconfiguration activates
      And client "A" rebuilds scope "team:red" to its final page
      Then the rebuild pages hold exactly these records:
        | table | pk  |
        | tasks | t-3 |
        | tasks | t-5 |

    @cap:provision @cap:capture @cap:inspect
    Scenario: activation happens at a transaction end that the main worker has also made durable
      When the operator runs a membership reconfiguration of "tasks" to scopes "user:{owner_id},team:{team}" to activation
      Then server inspection shows the activation boundary of the new membership generation is a "transaction_end" position at or before the main worker's durable processed boundary
      And server inspection shows the registry generation and the membership generations activated in the same transaction

  Rule: the prior generation is retained while active continuation state needs it

    @cap:provision @cap:capture
    Scenario: continuation state from the old generation is judged stale, not malformed
      Given client "A" has started a rebuild of scope "user:alice" with limit 1 and holds its continuation
      When the operator runs a membership reconfiguration of "tasks" to scopes "team:{team}" to activation
      And client "A" continues its rebuild of scope "user:alice"
      Then the response status is 409 with error code "rebuild_restart_required"
      When client "A" pulls presenting the "old" cursors
      Then the response status is 200
      And the pull response lists scopes "team:red, user:alice" in "rebuild"

  Rule: rebuilding live edges in place or exposing a partially backfilled generation is a violation

    @negative @cap:provision @cap:capture @cap:inspect
    Scenario: the live edges stay untouched until activation
      Given the harness records the live membership edges as "live_before"
      When the operator starts a membership reconfiguration of "tasks" to scopes "user:{owner_id},team:{team}" with backfill batch size 1
      And the harness holds the backfill after its second batch
      Then server inspection shows the live membership edges equal to "live_before"
      And server inspection shows the staged edges held apart from the live ones

    @negative @property @cap:provision @cap:capture
    Scenario: for many generated hold points, a rebuild is all old or all new, never a mix
      When the harness runs the reconfiguration of "tasks" to scopes "user:{owner_id},team:{team}" many times, holding the backfill after a generated batch number from 0 to 4 and rebuilding scope "user:alice" and "team:red" while held and after activation
      Then every rebuild taken while held equals the old-generation contents of its scope
      And every rebuild taken after activation equals the new-generation contents of its scope
