@SYNC-PULL-010 @server
Feature: Immutable Rebuild Snapshot
  The first request of a rebuild (cursor null) fixes a boundary B, reads the
  complete contents of the scope from the WAL-materialized projections and
  membership exactly as of B, computes every row digest and the scope digest,
  and stores all of it as one immutable stage, in one transaction. Every later
  page is cut from that stage by row ordinal, in the unsigned canonical order
  of (logical table ID, typed primary key). Later writes, deletes and
  membership moves cannot leak into the pages, the order and contents cannot
  shift between pages, and nobody can observe a half-built stage. A rebuild
  that re-reads live rows per page, or that stages rows from a snapshot not
  tied to B, hands the client a mixture of two moments that its final digest
  cannot describe.

  The harness starts multi-page rebuilds, changes the scope between pages,
  holds capture back while a rebuild starts, and races two identical first
  requests, then checks records, order and the final checksum against its
  own digest of what it received.

  Background:
    Given a registered table "tasks" with columns:
      | column  | type   | nullable | key |
      | id      | int    | false    | yes |
      | list_id | string | false    | no  |
      | title   | string | false    | no  |
    And table "tasks" places each row in scope "list:{list_id}"
    And the default scope of user "alice" is revoked
    And user "alice" is assigned scope "list:a"
    And user "alice" is assigned scope "list:b"
    And the harness has committed and capture has materialized:
      """
      INSERT INTO public.tasks (id, list_id, title) VALUES (1, 'a', 'one'), (2, 'a', 'two'), (3, 'a', 'three'), (4, 'a', 'four'), (10, 'a', 'ten');
      """
    And the harness client "H" of user "alice" has completed a sync

  @cap:provision @cap:scopes @cap:sourceSql @cap:capture
  Rule: every page after the first reads only the immutable stage

    @negative
    Scenario: writes, deletes, inserts and membership moves between pages do not reach the pages
      When the harness client "H" requests page 1 of a rebuild of "list:a" with limit 2 and rebuild ID "0c6a8f3e-1d2b-4a5c-9e7f-3b1d5c7e9a21"
      Then the rebuild pages hold exactly these records:
        | table | pk | title |
        | tasks | 1  | one   |
        | tasks | 2  | two   |
      When the harness has committed and capture has materialized:
        """
        UPDATE public.tasks SET title = 'four v2' WHERE id = 4;
        DELETE FROM public.tasks WHERE id = 10;
        INSERT INTO public.tasks (id, list_id, title) VALUES (6, 'a', 'six');
        UPDATE public.tasks SET list_id = 'b' WHERE id = 3;
        """
      And the harness client "H" requests the remaining rebuild pages of "list:a"
      Then the rebuild pages hold exactly these records:
        | table | pk | title |
        | tasks | 1  | one   |
        | tasks | 2  | two   |
        | tasks | 3  | three |
        | tasks | 4  | four  |
        | tasks | 10 | ten   |
      And the "server_version" of each record equals the one the harness received for that row when it completed its sync
      And the final rebuild page has "checksum" equal to the scope digest the harness codec computes for scope "list:a" from those records

  @cap:provision @cap:scopes @cap:sourceSql @cap:capture
  Rule: the stage has one fixed order and content whatever the page size

    @negative
    Scenario Outline: pages concatenate to the same ordered records for any limit
      When the harness client "H" requests page 1 of a rebuild of "list:a" with limit <limit> and rebuild ID "<rebuild_id>"
      And the harness client "H" requests the remaining rebuild pages of "list:a"
      Then the rebuild took <pages> pages, each but the last with "has_more" true and exactly <limit> records
      And the records of all pages, concatenated in order, have "pk" values 1, 2, 3, 4, 10 with no repeat
      And the final rebuild page has "checksum" equal to the scope digest the harness codec computes for scope "list:a" from those records

      Examples:
        | limit | pages | rebuild_id                           |
        | 1     | 5     | 6f1e2d3c-4b5a-4968-8776-a5b4c3d2e1f0 |
        | 2     | 3     | 7a2b3c4d-5e6f-4071-8293-a4b5c6d7e8f9 |
        | 3     | 2     | 8b3c4d5e-6f70-4182-93a4-b5c6d7e8f90a |
        | 1000  | 1     | 9c4d5e6f-7081-4293-a4b5-c6d7e8f90a1b |

  @cap:provision @cap:scopes @cap:sourceSql @cap:capture
  Rule: the stage is taken from WAL-materialized projections exactly through the boundary B

    @negative
    Scenario: a committed row that capture has not materialized is not staged, and arrives after the final cursor
      Given the capture worker is paused
      And the harness commits on the source database:
        """
        INSERT INTO public.tasks (id, list_id, title) VALUES (12, 'a', 'twelve');
        """
      When the harness client "H" requests page 1 of a rebuild of "list:a" with limit 1000 and rebuild ID "1d2e3f40-5162-4738-89a0-b1c2d3e4f506"
      Then the response status is 200
      And the rebuild pages hold exactly these records:
        | table | pk | title |
        | tasks | 1  | one   |
        | tasks | 2  | two   |
        | tasks | 3  | three |
        | tasks | 4  | four  |
        | tasks | 10 | ten   |
      And the final rebuild page has "checksum" equal to the scope digest the harness codec computes for scope "list:a" from those records
      When the capture worker resumes
      And capture has materialized every committed source transaction
      And the harness client "H" pulls presenting the "final_scope_cursor" for "list:a"
      Then the pull response lists exactly these changes:
        | scope  | table | op     | pk | title  |
        | list:a | tasks | upsert | 12 | twelve |

  @cap:provision @cap:scopes @cap:sourceSql @cap:capture
  Rule: the stage and its digest are created atomically and no partial session is ever served

    @negative
    Scenario: two identical first requests racing each other see one complete session
      When the harness client "H" sends these two first rebuild requests concurrently, both for "list:a" with limit 2 and rebuild ID "2e3f4051-6273-4849-9ab1-c2d3e4f50617"
      Then both responses have status 200 and byte-identical bodies
      When the harness client "H" requests the remaining rebuild pages of "list:a"
      Then the records of all pages, concatenated in order, have "pk" values 1, 2, 3, 4, 10 with no repeat
      And the final rebuild page has "checksum" equal to the scope digest the harness codec computes for scope "list:a" from those records
