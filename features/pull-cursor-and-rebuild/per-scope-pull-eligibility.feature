@SYNC-PULL-001 @server
Feature: Per Scope Pull Eligibility
  One pull page serves every scope of the client, and each scope resumes from
  its own cursor. The server first decides, for each scope on its own, which
  captured effects that scope may still deliver, collapses them to one
  candidate per row key, and only then lets the candidates of all scopes
  compete for the page limit. A server that counts raw effects across scopes
  first (for example "everything after the smallest cursor, limit n, then
  filter") lets one scope's backlog or one row's superseded versions fill the
  window, so a due change of another scope never reaches the client.

  The harness gives scopes far-apart cursors, commits known source
  transactions, pulls with small limits and compares the page with the one
  that per-scope eligibility demands. Every scope is judged against one
  boundary: commits that capture has not yet materialized are in no scope's
  page.

  Background:
    Given a registered table "tasks" with columns:
      | column    | type   | nullable | key |
      | id        | string | false    | yes |
      | list_id   | string | false    | no  |
      | also_list | string | true     | no  |
      | title     | string | false    | no  |
    And table "tasks" places each row in scope "list:{list_id}"
    And table "tasks" also places each row in scope "list:{also_list}" when "also_list" is not null
    And the default scope of user "alice" is revoked
    And user "alice" is assigned scope "list:a"
    And user "alice" is assigned scope "list:b"
    And user "alice" is assigned scope "list:c"
    And the harness client "H" of user "alice" has completed a sync

  @cap:provision @cap:scopes @cap:sourceSql @cap:capture
  Rule: each scope's eligible stream is resolved before the global limit is applied

    @negative
    Scenario: a backlog already delivered to one scope does not hide another scope's due change
      Given the harness has recorded the cursor of "H" for scope "list:a" as "a0"
      And the harness has committed and capture has materialized:
        """
        INSERT INTO public.tasks (id, list_id, also_list, title)
        SELECT 'b-' || lpad(g::text, 4, '0'), 'b', NULL, 'bulk ' || g FROM generate_series(1, 1500) AS g;
        """
      And the harness client "H" pulls with limit 1000 until "has_more" is false
      And the harness has committed and capture has materialized:
        """
        INSERT INTO public.tasks (id, list_id, also_list, title) VALUES ('a-late', 'a', NULL, 'late');
        """
      When the harness client "H" pulls with limit 10 presenting cursor "a0" for scope "list:a"
      Then the response status is 200
      And the pull response lists exactly these changes:
        | scope  | table | op     | pk     | title |
        | list:a | tasks | upsert | a-late | late  |
      And member "has_more" is false

    Scenario Outline: three interleaved scopes drain completely at any limit
      Given the harness commits on the source database:
        """
        INSERT INTO public.tasks (id, list_id, also_list, title) VALUES ('i-1', 'a', NULL, 'i-1 v1');
        """
      And the harness commits on the source database:
        """
        INSERT INTO public.tasks (id, list_id, also_list, title) VALUES ('i-2', 'b', NULL, 'i-2');
        """
      And the harness commits on the source database:
        """
        INSERT INTO public.tasks (id, list_id, also_list, title) VALUES ('i-3', 'c', NULL, 'i-3');
        """
      And the harness commits on the source database:
        """
        INSERT INTO public.tasks (id, list_id, also_list, title) VALUES ('i-4', 'a', NULL, 'i-4');
        """
      And the harness commits on the source database:
        """
        INSERT INTO public.tasks (id, list_id, also_list, title) VALUES ('i-5', 'b', NULL, 'i-5');
        """
      And the harness commits on the source database:
        """
        INSERT INTO public.tasks (id, list_id, also_list, title) VALUES ('i-6', 'c', NULL, 'i-6');
        """
      And the harness commits on the source database:
        """
        UPDATE public.tasks SET title = 'i-1 v2' WHERE id = 'i-1';
        """
      And capture has materialized every committed source transaction
      When the harness client "H" pulls with limit <limit> until "has_more" is false
      Then the drain took <pages> pull responses
      And every response of the drain except the last has member "has_more" true and exactly <limit> changes
      And the changes of the drain, concatenated in order, are exactly:
        | scope  | table | op     | pk  | title  |
        | list:b | tasks | upsert | i-2 | i-2    |
        | list:c | tasks | upsert | i-3 | i-3    |
        | list:a | tasks | upsert | i-4 | i-4    |
        | list:b | tasks | upsert | i-5 | i-5    |
        | list:c | tasks | upsert | i-6 | i-6    |
        | list:a | tasks | upsert | i-1 | i-1 v2 |
      And each value of "/checksums" in the last response equals the scope digest the harness computes from the rows "H" now holds for that scope

      Examples:
        | limit | pages |
        | 1     | 6     |
        | 2     | 3     |
        | 4     | 2     |
        | 7     | 1     |

  @cap:provision @cap:scopes @cap:sourceSql @cap:capture
  Rule: deduplication within a scope happens before candidates are counted against the limit

    @negative
    Scenario: superseded versions of one row do not use up the page
      Given the harness commits on the source database:
        """
        INSERT INTO public.tasks (id, list_id, also_list, title) VALUES ('t-1', 'a', NULL, 'v1');
        """
      And the harness commits on the source database:
        """
        UPDATE public.tasks SET title = 'v2' WHERE id = 't-1';
        """
      And the harness commits on the source database:
        """
        UPDATE public.tasks SET title = 'v3' WHERE id = 't-1';
        """
      And the harness commits on the source database:
        """
        UPDATE public.tasks SET title = 'v4' WHERE id = 't-1';
        """
      And the harness commits on the source database:
        """
        INSERT INTO public.tasks (id, list_id, also_list, title) VALUES ('t-2', 'a', NULL, 'other');
        """
      And capture has materialized every committed source transaction
      When the harness client "H" pulls with limit 2 presenting its current cursors
      Then the response status is 200
      And the pull response lists exactly these changes:
        | scope  | table | op     | pk  | title |
        | list:a | tasks | upsert | t-1 | v4    |
        | list:a | tasks | upsert | t-2 | other |
      And member "has_more" is false
      And the response has member "/checksums"

  @cap:provision @cap:scopes @cap:sourceSql @cap:capture
  Rule: all scopes of one pull are judged at the same read-consistent boundary

    Scenario: commits not yet materialized by capture are in no scope's page
      Given the capture worker is paused
      And the harness commits on the source database:
        """
        INSERT INTO public.tasks (id, list_id, also_list, title) VALUES ('p-a', 'a', NULL, 'paused a');
        """
      And the harness commits on the source database:
        """
        INSERT INTO public.tasks (id, list_id, also_list, title) VALUES ('p-b', 'b', NULL, 'paused b');
        """
      When the harness client "H" pulls with limit 10 presenting its current cursors
      Then the response status is 200
      And the pull response lists exactly these changes:
        | scope | table | op | pk |
      And member "has_more" is false
      When the capture worker resumes
      And capture has materialized every committed source transaction
      And the harness client "H" pulls with limit 10 presenting its current cursors
      Then the pull response lists exactly these changes:
        | scope  | table | op     | pk  |
        | list:a | tasks | upsert | p-a |
        | list:b | tasks | upsert | p-b |
