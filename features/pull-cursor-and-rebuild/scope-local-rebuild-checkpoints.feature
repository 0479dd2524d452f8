@SYNC-PULL-015 @server
Feature: Scope Local Rebuild Checkpoints
  A rebuild request writes only its own rebuild session, the immutable stage
  and the stored page outcomes. It does not touch the incremental checkpoint
  of the scope being rebuilt or of any other scope, another scope's cursors,
  retention or membership state, assignment, the scope-set version, or other
  rebuild sessions. The final cursor of a rebuild is acknowledged only when a
  later pull presents it. A server that, say, moves every scope's checkpoint
  to the rebuild boundary lets compaction delete changes another scope has
  not yet delivered; one that reconciles assignment during rebuild changes the
  scope-set version behind the client's back.

  The harness keeps one scope with unread changes while it rebuilds another,
  runs two rebuilds interleaved, grants a scope before a rebuild, and checks
  delivery, scope-set version and (through inspection or compaction) the
  checkpoints.

  Background:
    Given a registered table "tasks" with columns:
      | column  | type   | nullable | key |
      | id      | string | false    | yes |
      | list_id | string | false    | no  |
      | title   | string | false    | no  |
    And table "tasks" places each row in scope "list:{list_id}"
    And the default scope of user "alice" is revoked
    And user "alice" is assigned scope "list:a"
    And user "alice" is assigned scope "list:b"
    And the harness has committed and capture has materialized:
      """
      INSERT INTO public.tasks (id, list_id, title) VALUES ('t-1', 'a', 'one'), ('t-2', 'a', 'two'), ('t-3', 'a', 'three'), ('u-1', 'b', 'uno');
      """
    And the harness client "H" of user "alice" has completed a sync
    And the harness has recorded the cursors of "H" as "k0"
    And the harness client "H" has pulled presenting the "k0" cursors
    And the harness has committed and capture has materialized:
      """
      INSERT INTO public.tasks (id, list_id, title) VALUES ('u-2', 'b', 'dos'), ('u-3', 'b', 'tres'), ('u-4', 'b', 'cuatro');
      """

  @cap:provision @cap:scopes @cap:sourceSql @cap:capture
  Rule: rebuilding one scope does not change another scope's delivery or the scope-set version

    @negative
    Scenario: a full rebuild of one scope leaves the other scope's unread changes in place
      Given the harness has recorded the "scope_set_version" of "H" as "v"
      When the harness client "H" requests page 1 of a rebuild of "list:a" with limit 1 and rebuild ID "17c2f39a-d5ec-4708-aa3b-45c6e7f8b94f"
      And the harness has committed and capture has materialized:
        """
        INSERT INTO public.tasks (id, list_id, title) VALUES ('t-4', 'a', 'four');
        """
      And the harness client "H" requests the remaining rebuild pages of "list:a"
      And the harness client "H" repeats its request for page 1 of that rebuild
      And the harness client "H" pulls with limit 10 presenting the "k0" cursor for scope "list:b" and the "final_scope_cursor" for "list:a"
      Then the response status is 200
      And the pull response lists exactly these changes:
        | scope  | table | op     | pk  |
        | list:b | tasks | upsert | u-2 |
        | list:b | tasks | upsert | u-3 |
        | list:b | tasks | upsert | u-4 |
        | list:a | tasks | upsert | t-4 |
      And member "scope_set_version" equals the recorded "v"
      And member "scope_updates" is {"add":[],"remove":[]}

    Scenario: two interleaved rebuilds complete independently
      Given the harness has committed and capture has materialized:
        """
        INSERT INTO public.tasks (id, list_id, title) VALUES ('u-5', 'b', 'cinco');
        """
      When the harness client "H" requests page 1 of a rebuild of "list:a" with limit 1 and rebuild ID "28d3049b-e6fd-4819-bb4c-56d7f809ca50" as rebuild "ra"
      And the harness client "H" requests page 1 of a rebuild of "list:b" with limit 2 and rebuild ID "39e415ac-f70e-492a-8c5d-67e8091adb61" as rebuild "rb"
      And the harness client "H" requests the next page of rebuild "ra"
      And the harness client "H" requests the next page of rebuild "rb"
      And the harness client "H" requests the remaining pages of rebuild "ra"
      And the harness client "H" requests the remaining pages of rebuild "rb"
      Then the records of rebuild "ra" are exactly "t-1", "t-2", "t-3" and its final "checksum" equals the scope digest the harness codec computes from them
      And the records of rebuild "rb" are exactly "u-1", "u-2", "u-3", "u-4", "u-5" and its final "checksum" equals the scope digest the harness codec computes from them

    Scenario: rebuild does not reconcile assignment; the next pull reports a pending grant exactly once
      Given the harness has recorded the "scope_set_version" of "H" as "v"
      And user "alice" is assigned scope "list:c"
      When the harness client "H" requests page 1 of a rebuild of "list:a" with limit 1000 and rebuild ID "4af5260b-0812-4a3b-9d6e-78f91a2bec72"
      And the harness client "H" pulls presenting the "final_scope_cursor" for "list:a"
      Then member "scope_set_version" equals the recorded "v" plus 1
      And the response member "/scope_updates/add" equals [{"id":"list:c","cursor":null}]
      When the harness client "H" pulls with limit 10 presenting its current cursors
      Then member "scope_set_version" equals the recorded "v" plus 1
      And the response member "/scope_updates/add" equals []

  @cap:provision @cap:scopes @cap:sourceSql @cap:capture @cap:inspect
  Rule: no incremental checkpoint changes before a later pull presents the final cursor

    @negative
    Scenario: checkpoints of both scopes are untouched by every rebuild request
      Given server inspection records the checkpoints of "H" as "before"
      When the harness client "H" requests page 1 of a rebuild of "list:a" with limit 1 and rebuild ID "5b06371c-1923-4b4c-8e7f-89a02b3cfd83"
      And the harness client "H" requests the remaining rebuild pages of "list:a"
      And the harness client "H" repeats its request for page 2 of that rebuild
      Then server inspection shows the checkpoints of "H" equal to the "before" ones
      When the harness client "H" pulls presenting the "final_scope_cursor" for "list:a"
      Then server inspection shows the checkpoint of "H" for scope "list:a" at the position of that "final_scope_cursor"
      And server inspection shows the checkpoint of "H" for scope "list:b" at the position of the cursor "H" presented for "list:b" in that pull

  @cap:provision @cap:scopes @cap:sourceSql @cap:capture @cap:compaction
  Rule: compaction after a rebuild still honours the checkpoints that were presented before it

    @negative
    Scenario: a completed rebuild does not let compaction pass the other scope's last presented cursor
      Given the harness client "H" has requested page 1 of a rebuild of "list:a" with limit 1000 and rebuild ID "6c17482d-2a34-4c5d-9f80-9ab13c4d0e94"
      When the operator compacts scope "list:b"
      And the operator compacts scope "list:a"
      And the harness client "H" pulls with limit 10 presenting the "k0" cursors
      Then the response status is 200
      And member "rebuild" is []
      And the pull response lists exactly these changes:
        | scope  | table | op     | pk  |
        | list:b | tasks | upsert | u-2 |
        | list:b | tasks | upsert | u-3 |
        | list:b | tasks | upsert | u-4 |
