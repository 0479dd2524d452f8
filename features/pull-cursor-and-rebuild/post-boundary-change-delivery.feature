@SYNC-PULL-012 @server
Feature: Post Boundary Change Delivery
  A rebuild snapshot describes its scope exactly at the boundary B, and its
  final_scope_cursor is an incremental cursor at B. Everything that happens to
  the scope after B (updates, deletes, new rows, rows moving in or out) stays
  out of the snapshot and is delivered by ordinary incremental pull once the
  client presents the final cursor, including changes committed while the
  client was still fetching or applying the rebuild pages. If such a change
  slipped into the snapshot, the final checksum would describe a state that
  never existed at B; if pull then failed to deliver it, the client would miss
  it for good.

  The harness changes the scope in every way between rebuild pages and after
  the final page, then checks that the pages hold none of it and that one
  pull with the final cursor delivers all of it.

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
      INSERT INTO public.tasks (id, list_id, title) VALUES ('t-1', 'a', 'one'), ('t-2', 'a', 'two'), ('t-3', 'a', 'three'), ('t-4', 'a', 'four'), ('t-5', 'a', 'five');
      """
    And the harness client "H" of user "alice" has completed a sync
    And the harness client "H" has requested page 1 of a rebuild of "list:a" with limit 2 and rebuild ID "6c0d4e8f-2a31-4c5d-9e7f-9a1b3c5d7e94"
    And the harness commits on the source database:
      """
      UPDATE public.tasks SET title = 'four v2' WHERE id = 't-4';
      """
    And the harness commits on the source database:
      """
      DELETE FROM public.tasks WHERE id = 't-5';
      """
    And the harness commits on the source database:
      """
      INSERT INTO public.tasks (id, list_id, title) VALUES ('t-6', 'a', 'six');
      """
    And the harness commits on the source database:
      """
      UPDATE public.tasks SET list_id = 'b' WHERE id = 't-3';
      """
    And capture has materialized every committed source transaction

  @cap:provision @cap:scopes @cap:sourceSql @cap:capture
  Rule: changes after the boundary are excluded from the staged snapshot

    @negative
    Scenario: later pages show the scope as it was at the boundary
      When the harness client "H" requests the remaining rebuild pages of "list:a"
      Then the rebuild pages hold exactly these records:
        | table | pk  | title |
        | tasks | t-1 | one   |
        | tasks | t-2 | two   |
        | tasks | t-3 | three |
        | tasks | t-4 | four  |
        | tasks | t-5 | five  |
      And no rebuild page holds a record for "t-6"
      And the final rebuild page has "checksum" equal to the scope digest the harness codec computes for scope "list:a" from those records

  @cap:provision @cap:scopes @cap:sourceSql @cap:capture
  Rule: changes after the boundary are delivered by pull once the final cursor is presented

    @negative
    Scenario: one pull with the final cursor delivers every later write, delete and membership move
      Given the harness client "H" has requested the remaining rebuild pages of "list:a"
      When the harness client "H" pulls presenting the "final_scope_cursor" for "list:a"
      Then the response status is 200
      And the pull response lists exactly these changes:
        | scope  | table | op     | pk  | title   |
        | list:a | tasks | upsert | t-4 | four v2 |
        | list:a | tasks | delete | t-5 |         |
        | list:a | tasks | upsert | t-6 | six     |
        | list:a | tasks | delete | t-3 |         |
        | list:b | tasks | upsert | t-3 | three   |
      And member "has_more" is false
      And the value of "/checksums/list:a" equals the scope digest the harness computes from the final rebuild records with those changes applied

    @negative
    Scenario: a change committed after the final page, before the final cursor is presented, is delivered too
      Given the harness client "H" has requested the remaining rebuild pages of "list:a"
      And the harness has committed and capture has materialized:
        """
        UPDATE public.tasks SET title = 'one late' WHERE id = 't-1';
        """
      When the harness client "H" pulls presenting the "final_scope_cursor" for "list:a"
      Then the pull response lists these changes for scope "list:a", in order:
        | op     | pk  | title    |
        | upsert | t-4 | four v2  |
        | delete | t-5 |          |
        | upsert | t-6 | six      |
        | delete | t-3 |          |
        | upsert | t-1 | one late |
