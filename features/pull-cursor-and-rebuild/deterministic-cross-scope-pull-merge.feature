@SYNC-PULL-002 @server
Feature: Deterministic Cross Scope Pull Merge
  After each scope's candidates are known, the page is a k-way merge: the next
  change is always the smallest remaining candidate under the tuple
  (stream position, scope ID bytes, logical table ID bytes, typed primary key
  bytes, operation rank), where the stream position compares commit LSN, then
  event ordinal, then effect ordinal, and IDs compare as unsigned UTF-8 bytes.
  The same streams at the same boundary therefore always give the same page.
  "has_more" is true exactly when some scope still has an unselected
  candidate, and because every page takes the least remaining candidates up
  to a fixed boundary, a draining client reaches every candidate after a
  bounded number of pages, however busy another scope is.

  The harness commits rows in a known order, pulls repeatedly with fixed
  cursors and small limits, and checks the order, the repeatability of pages,
  the "has_more" flag at the exact edge, and that an old candidate in a quiet
  scope is never pushed back by a busy one.

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
    And the harness client "H" of user "alice" has completed a sync

  @cap:provision @cap:scopes @cap:sourceSql @cap:capture
  Rule: candidates are merged by the exact typed tuple

    Scenario: commit order decides before scope order
      Given the harness commits on the source database:
        """
        INSERT INTO public.tasks (id, list_id, also_list, title) VALUES ('t-1', 'b', NULL, 'first commit');
        """
      And the harness commits on the source database:
        """
        INSERT INTO public.tasks (id, list_id, also_list, title) VALUES ('t-2', 'a', NULL, 'second commit');
        """
      And capture has materialized every committed source transaction
      When the harness client "H" pulls with limit 10 presenting its current cursors
      Then the pull response lists exactly these changes, in this order:
        | scope  | table | op     | pk  |
        | list:b | tasks | upsert | t-1 |
        | list:a | tasks | upsert | t-2 |

    @negative
    Scenario Outline: one source event seen by two scopes is ordered by unsigned scope ID bytes
      Given user "bob" is assigned scope "list:<first_list>"
      And user "bob" is assigned scope "list:<second_list>"
      And the default scope of user "bob" is revoked
      And the harness client "B" of user "bob" has completed a sync
      And the harness has committed and capture has materialized:
        """
        INSERT INTO public.tasks (id, list_id, also_list, title) VALUES ('t-9', '<list_id>', '<also_list>', 'shared');
        """
      When the harness client "B" pulls with limit 10 presenting its current cursors
      Then the pull response lists exactly these changes, in this order:
        | scope              | table | op     | pk  |
        | list:<first_list>  | tasks | upsert | t-9 |
        | list:<second_list> | tasks | upsert | t-9 |

      Examples: uppercase 0x42 sorts before lowercase 0x61, whichever column holds it
        | list_id | also_list | first_list | second_list |
        | a       | B         | B          | a           |
        | B       | a         | B          | a           |

      Examples: a two-byte UTF-8 letter 0xC3 0xA9 sorts after ASCII "z"
        | list_id | also_list | first_list | second_list |
        | é       | z         | z          | é           |

  @cap:provision @cap:scopes @cap:sourceSql @cap:capture
  Rule: the same streams at the same boundary always yield the same selection and order

    @negative
    Scenario: repeating a pull with the same cursors gives the same page, and both issued cursors lead to the same next page
      Given the harness has committed and capture has materialized:
        """
        INSERT INTO public.tasks (id, list_id, also_list, title) VALUES ('t-1', 'a', NULL, 'one'), ('t-2', 'b', NULL, 'two'), ('t-3', 'a', 'b', 'three');
        """
      And the harness has recorded the cursors of "H" as "k0"
      When the harness client "H" pulls with limit 2 presenting the "k0" cursors
      And the harness records that response as "r1" and the cursors it issued as "k1"
      And the harness client "H" pulls with limit 2 presenting the "k0" cursors
      And the harness records that response as "r2" and the cursors it issued as "k2"
      Then member "changes" of "r1" and of "r2" are byte-identical
      And member "has_more" of "r1" and of "r2" are equal
      When the harness client "H" pulls with limit 10 presenting the "k1" cursors
      And the harness records that response as "n1"
      And the harness client "H" pulls with limit 10 presenting the "k2" cursors
      And the harness records that response as "n2"
      Then member "changes" of "n1" and of "n2" are byte-identical

  @cap:provision @cap:scopes @cap:sourceSql @cap:capture
  Rule: has_more is computed from the remaining heads of all scope streams

    @negative
    Scenario Outline: the page edge is exact when the remaining candidates are spread over scopes
      Given the harness has committed and capture has materialized:
        """
        INSERT INTO public.tasks (id, list_id, also_list, title) VALUES ('t-1', 'a', NULL, 'one'), ('t-2', 'b', NULL, 'two'), ('t-3', 'a', NULL, 'three');
        """
      When the harness client "H" pulls with limit <limit> presenting its current cursors
      Then the pull response holds <first_count> changes
      And member "has_more" is <has_more>
      And the response <checksums> member "/checksums"
      When the harness client "H" pulls with limit <limit> presenting its current cursors
      Then the pull response holds <second_count> changes
      And member "has_more" is false

      Examples:
        | limit | first_count | has_more | checksums | second_count |
        | 3     | 3           | false    | has       | 0            |
        | 2     | 2           | true     | has no    | 1            |

  @cap:provision @cap:scopes @cap:sourceSql @cap:capture
  Rule: progress at a finite boundary is starvation-free

    @negative
    Scenario: an older candidate in a quiet scope comes first even when a busy scope has thousands of later ones
      Given the harness commits on the source database:
        """
        INSERT INTO public.tasks (id, list_id, also_list, title) VALUES ('q-1', 'b', NULL, 'quiet');
        """
      And the harness commits on the source database:
        """
        INSERT INTO public.tasks (id, list_id, also_list, title)
        SELECT 'x-' || lpad(g::text, 4, '0'), 'a', NULL, 'busy ' || g FROM generate_series(1, 2000) AS g;
        """
      And capture has materialized every committed source transaction
      When the harness client "H" pulls with limit 1 presenting its current cursors
      Then the pull response lists exactly these changes:
        | scope  | table | op     | pk  |
        | list:b | tasks | upsert | q-1 |
      And member "has_more" is true

    @negative
    Scenario: a quiet scope's candidate arrives right after the busy scope's earlier candidates
      Given the harness commits on the source database:
        """
        INSERT INTO public.tasks (id, list_id, also_list, title)
        SELECT 'x-' || lpad(g::text, 4, '0'), 'a', NULL, 'busy ' || g FROM generate_series(1, 2000) AS g;
        """
      And the harness commits on the source database:
        """
        INSERT INTO public.tasks (id, list_id, also_list, title) VALUES ('q-1', 'b', NULL, 'quiet');
        """
      And capture has materialized every committed source transaction
      When the harness client "H" pulls with limit 500 until "has_more" is false
      Then the drain took 5 pull responses
      And every response of the drain except the last has member "has_more" true and exactly 500 changes
      And the last response of the drain lists exactly these changes:
        | scope  | table | op     | pk  |
        | list:b | tasks | upsert | q-1 |

    @negative
    Scenario: commits made while a client drains never push an older candidate back
      Given the harness commits on the source database:
        """
        INSERT INTO public.tasks (id, list_id, also_list, title)
        SELECT 'x-' || lpad(g::text, 4, '0'), 'a', NULL, 'busy ' || g FROM generate_series(1, 2000) AS g;
        """
      And the harness commits on the source database:
        """
        INSERT INTO public.tasks (id, list_id, also_list, title) VALUES ('q-1', 'b', NULL, 'quiet');
        """
      And capture has materialized every committed source transaction
      And the harness client "H" pulls with limit 500 presenting its current cursors
      And the harness has committed and capture has materialized:
        """
        INSERT INTO public.tasks (id, list_id, also_list, title)
        SELECT 'y-' || lpad(g::text, 4, '0'), 'a', NULL, 'later ' || g FROM generate_series(1, 2000) AS g;
        """
      When the harness client "H" pulls with limit 500 until "has_more" is false
      Then among all changes received since the first pull of this scenario, the change for "q-1" in scope "list:b" is number 2001
      And every change for a row with an id starting "y-" comes after the change for "q-1"
      And every nonterminal response of the drain delivered at least one change not received before
