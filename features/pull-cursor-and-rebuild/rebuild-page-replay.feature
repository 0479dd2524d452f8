@SYNC-PULL-013 @server
Feature: Rebuild Page Replay
  Responses get lost and clients crash between pages, so any rebuild request
  may be sent again: the first one (same rebuild ID, cursor null), an
  intermediate one (same continuation) or the final one. The server answers a
  repeat with the exact page it stored the first time, byte for byte,
  including the same continuation and final cursor strings. A repeat never
  stages a new snapshot, never reads live rows, never moves the row ordinal,
  never recomputes the digest and never touches checkpoints or the scope-set
  version. This holds only while the client's accepted-write epoch is
  unchanged; after the client has had a write accepted, a repeat is answered
  with 409 rebuild_restart_required instead of old data.

  The harness completes a rebuild, changes the scope, then repeats each
  request and compares bodies byte for byte, reading checkpoints through
  server inspection where available.

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
    And the harness client "H" has requested page 1 of a rebuild of "list:a" with limit 2 and rebuild ID "7d1e5f90-3b42-4d6e-8f80-ab2c4d6e8fa5"
    And the harness client "H" has requested the remaining rebuild pages of "list:a"
    And the rebuild took 3 pages

  @cap:provision @cap:scopes @cap:sourceSql @cap:capture
  Rule: a repeated first, intermediate or final request returns its exact stored page

    @negative
    Scenario Outline: a repeat after later pages and later writes is byte-identical
      Given the harness has committed and capture has materialized:
        """
        UPDATE public.tasks SET title = title || ' changed' WHERE list_id = 'a';
        INSERT INTO public.tasks (id, list_id, title) VALUES ('t-0', 'a', 'zero');
        """
      When the harness client "H" repeats its request for page <page> of that rebuild
      Then the response status is 200
      And the response body is byte-identical to the first response to page <page> of that rebuild

      Examples:
        | page | kind of request            |
        | 1    | first request, cursor null |
        | 2    | intermediate continuation  |
        | 3    | final continuation         |

    @negative
    Scenario: repeating page 1 does not move the row ordinal
      When the harness client "H" repeats its request for page 1 of that rebuild
      And the harness client "H" repeats its request for page 2 of that rebuild
      Then the response body is byte-identical to the first response to page 2 of that rebuild
      And the rebuild pages hold these records on that page:
        | table | pk  |
        | tasks | t-3 |
        | tasks | t-4 |

    Scenario: an empty scope's single final page is replayed the same way
      Given the harness client "H" has requested page 1 of a rebuild of "list:b" with limit 2 and rebuild ID "8e2f6a01-4c53-4e7f-90a1-bc3d5e7f9ab6"
      And the final rebuild page holds 0 records and a non-null "final_scope_cursor"
      And the harness has committed and capture has materialized:
        """
        INSERT INTO public.tasks (id, list_id, title) VALUES ('u-1', 'b', 'uno');
        """
      When the harness client "H" repeats its request for page 1 of that rebuild
      Then the response body is byte-identical to the first response to page 1 of that rebuild

  @cap:provision @cap:scopes @cap:sourceSql @cap:capture @cap:inspect
  Rule: a repeat has no side effect on checkpoints or the scope-set version

    @negative
    Scenario: repeating every page leaves checkpoints and the scope-set version alone
      Given server inspection records the checkpoints of "H" as "before"
      And the harness has recorded the "scope_set_version" of "H" as "v"
      When the harness client "H" repeats its request for page 1 of that rebuild
      And the harness client "H" repeats its request for page 2 of that rebuild
      And the harness client "H" repeats its request for page 3 of that rebuild
      Then server inspection shows the checkpoints of "H" equal to the "before" ones
      When the harness client "H" pulls with limit 10 presenting its current cursors
      Then member "scope_set_version" equals the recorded "v"

  @cap:provision @cap:scopes @cap:sourceSql @cap:capture
  Rule: replay is allowed only while the client's accepted-write epoch is unchanged

    @negative
    Scenario Outline: after an accepted write by the same client every repeat is refused
      Given the harness client "H" pushes a batch with:
        | mutation_id                          | operation | table | pk  | base_version | list_id | title        |
        | 70a00001-0000-4000-8000-000000000001 | insert    | tasks | t-9 |              | a       | written by H |
      And the push outcome of mutation "70a00001-0000-4000-8000-000000000001" is "applied"
      When the harness client "H" repeats its request for page <page> of that rebuild
      Then the response status is 409 with error code "rebuild_restart_required"
      And the error body has "scope_id" equal to "list:a" and "retryable" false
      And the response has no member "/records", no member "/final_scope_cursor" and no member "/checksum"

      Examples:
        | page |
        | 1    |
        | 2    |
        | 3    |
