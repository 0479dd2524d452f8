@SYNC-PULL-004 @server
Feature: Explicit Pull Candidate Outcomes
  Every candidate the merge selects must reach the client as one explicit
  change: an "upsert" with the complete row, its "row_checksum" and its
  "server_version", or a "delete" (rowless for an authoritative removal from
  the scope, or carrying the authoritative tombstone row and its checksum).
  The row comes from what the capture worker stored for that effect, never
  from the live source table, so a historical change is shown as it was. When
  the server cannot build an outcome for a selected candidate (its captured
  projection is missing, its stored digest does not verify), it fails the
  whole page: no changes, no cursor, no checksums, and no checkpoint moves. A
  page that quietly leaves a candidate out, or serves the rest of the page,
  would let the client's cursor pass a change it never received.

  The harness checks the shape and digest of every change against its own
  codec, pauses capture to show that pulls read captured state only, and uses
  capture-store fault controls to show that a broken candidate fails the
  whole request and leaves nothing acknowledged.

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
    And the harness has committed and capture has materialized:
      """
      INSERT INTO public.tasks (id, list_id, also_list, title) VALUES ('t-1', 'a', NULL, 'one'), ('t-2', 'a', NULL, 'two'), ('t-3', 'a', NULL, 'three');
      """
    And the harness client "H" of user "alice" has completed a sync

  @cap:provision @cap:scopes @cap:sourceSql @cap:capture
  Rule: every selected candidate yields exactly one explicit upsert or delete

    Scenario: upserts carry a complete verified row and deletes that remove a row from a scope carry none
      Given the harness commits on the source database:
        """
        INSERT INTO public.tasks (id, list_id, also_list, title) VALUES ('t-4', 'a', NULL, 'four');
        """
      And the harness commits on the source database:
        """
        UPDATE public.tasks SET title = 'one v2' WHERE id = 't-1';
        """
      And the harness commits on the source database:
        """
        DELETE FROM public.tasks WHERE id = 't-2';
        """
      And the harness commits on the source database:
        """
        UPDATE public.tasks SET list_id = 'b' WHERE id = 't-3';
        """
      And capture has materialized every committed source transaction
      When the harness client "H" pulls with limit 10 presenting its current cursors
      Then the response status is 200
      And the pull response lists exactly these changes:
        | scope  | table | op     | pk  | title  |
        | list:a | tasks | upsert | t-4 | four   |
        | list:a | tasks | upsert | t-1 | one v2 |
        | list:a | tasks | delete | t-2 |        |
        | list:a | tasks | delete | t-3 |        |
        | list:b | tasks | upsert | t-3 | three  |
      And every "upsert" change has a "row" with exactly the members "also_list", "id", "list_id" and "title", whose "id" equals its "pk"
      And every "upsert" change has a "row_checksum" equal to the row digest the harness codec computes from the manifest, its "row" and its "server_version"
      And every "delete" change has no member "row" and no member "row_checksum"
      And every change has a nonempty "server_version" matching "^[\x20\x21\x23-\x5B\x5D-\x7E]{1,64}$"

    @negative
    Scenario Outline: no selected candidate is silently left out of a page
      Given the harness commits on the source database:
        """
        INSERT INTO public.tasks (id, list_id, also_list, title) VALUES ('t-4', 'a', NULL, 'four'), ('t-5', 'b', NULL, 'five');
        """
      And the harness commits on the source database:
        """
        UPDATE public.tasks SET title = 'one v2' WHERE id = 't-1';
        """
      And the harness commits on the source database:
        """
        DELETE FROM public.tasks WHERE id = 't-2';
        """
      And the harness commits on the source database:
        """
        UPDATE public.tasks SET list_id = 'b' WHERE id = 't-3';
        """
      And capture has materialized every committed source transaction
      When the harness client "H" pulls with limit <limit> until "has_more" is false
      Then every response of the drain except the last has member "has_more" true and exactly <limit> changes
      And the changes of the drain, concatenated in order, are exactly:
        | scope  | table | op     | pk  |
        | list:a | tasks | upsert | t-4 |
        | list:b | tasks | upsert | t-5 |
        | list:a | tasks | upsert | t-1 |
        | list:a | tasks | delete | t-2 |
        | list:a | tasks | delete | t-3 |
        | list:b | tasks | upsert | t-3 |

      Examples:
        | limit |
        | 1     |
        | 2     |
        | 4     |

  @cap:provision @cap:scopes @cap:sourceSql @cap:capture
  Rule: the outcome is built from the WAL-captured projection, never from the live row

    @negative
    Scenario: a historical change is served as captured even though the live row has moved on
      Given the harness has committed and capture has materialized:
        """
        UPDATE public.tasks SET title = 'v1' WHERE id = 't-1';
        """
      And the capture worker is paused
      And the harness commits on the source database:
        """
        UPDATE public.tasks SET title = 'v2' WHERE id = 't-1';
        """
      When the harness client "H" pulls with limit 10 presenting its current cursors
      Then the pull response lists exactly these changes:
        | scope  | table | op     | pk  | title |
        | list:a | tasks | upsert | t-1 | v1    |
      And the harness records the "server_version" of that change as "sv1"
      And the "row_checksum" of that change equals the row digest the harness codec computes for title "v1" and version "sv1"
      When the capture worker resumes
      And capture has materialized every committed source transaction
      And the harness client "H" pulls with limit 10 presenting its current cursors
      Then the pull response lists exactly these changes:
        | scope  | table | op     | pk  | title |
        | list:a | tasks | upsert | t-1 | v2    |
      And the "server_version" of that change differs from "sv1"

  @cap:provision @cap:scopes @cap:sourceSql @cap:capture @cap:inspect
  Rule: a candidate without a valid outcome fails the whole page with no cursor, checksum or checkpoint advance

    @negative
    Scenario Outline: a broken captured candidate fails the request, not just its own change
      Given the harness has committed and capture has materialized:
        """
        UPDATE public.tasks SET title = title || ' edited' WHERE id IN ('t-1', 't-2', 't-3');
        """
      And the harness has recorded the cursors of "H" as "k0"
      And the harness client "H" has pulled with limit 10 presenting the "k0" cursors
      And the harness has committed and capture has materialized:
        """
        UPDATE public.tasks SET title = title || ' again' WHERE id IN ('t-1', 't-2', 't-3');
        """
      And the harness has recorded the cursors of "H" as "k1"
      And server inspection shows the checkpoint of "H" for scope "list:a" at the position of the "k0" cursor for that scope
      And <fault> for row "t-2" in scope "list:a"
      When the harness client "H" pulls with limit 10 presenting the "k1" cursors
      Then the response status is 500 with error code "sync_integrity_failure"
      And the error body has "retryable" false
      And the response has no member "/changes", no member "/scope_cursors" and no member "/checksums"
      And the readiness response is 503 with body exactly:
        """
        {"ready":false}
        """
      And server inspection shows the checkpoint of "H" for scope "list:a" at the position of the "k0" cursor for that scope
      When the operator removes the injected capture-store fault
      And the harness client "H" pulls with limit 10 presenting the "k1" cursors
      Then the response status is 200
      And the pull response lists exactly these changes:
        | scope  | table | op     | pk  | title              |
        | list:a | tasks | upsert | t-1 | one edited again   |
        | list:a | tasks | upsert | t-2 | two edited again   |
        | list:a | tasks | upsert | t-3 | three edited again |

      Examples:
        | fault                                                              |
        | the operator deletes the captured projection of the latest effect  |
        | the operator overwrites the stored row digest of the latest effect |
