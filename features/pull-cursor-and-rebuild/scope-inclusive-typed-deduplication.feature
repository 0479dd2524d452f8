@SYNC-PULL-005 @server
Feature: Scope Inclusive Typed Deduplication
  Before a page is cut, the server keeps for each key only the candidate with
  the greatest eligible position, and the key is the triple (scope ID, logical
  table ID, typed primary key). The scope belongs to the key because the same
  row seen through two scopes must reach the client twice, once per scope,
  and delivering it in one scope must not use up the other scope's progress.
  The table and the key are compared as typed values, not as one joined
  string, so "doc" + "x:1" and "doc:x" + "1" stay two rows, and two int64 keys
  that a floating-point parse would merge stay two rows.

  The harness writes rows with overlapping scopes, colliding joined strings
  and large int64 keys, then checks on the wire how many changes arrive, in
  which scope, with which version.

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

  @cap:provision @cap:scopes @cap:sourceSql @cap:capture
  Rule: the scope is part of the deduplication key

    @negative
    Scenario: a row seen through two scopes yields one change per scope with the same version
      Given the harness has committed and capture has materialized:
        """
        INSERT INTO public.tasks (id, list_id, also_list, title) VALUES ('t-7', 'a', 'b', 'shared v1');
        """
      And the harness client "H" of user "alice" has completed a sync
      And the harness has committed and capture has materialized:
        """
        UPDATE public.tasks SET title = 'shared v2' WHERE id = 't-7';
        """
      When the harness client "H" pulls with limit 1 until "has_more" is false
      Then the changes of the drain, concatenated in order, are exactly:
        | scope  | table | op     | pk  | title     |
        | list:a | tasks | upsert | t-7 | shared v2 |
        | list:b | tasks | upsert | t-7 | shared v2 |
      And both changes carry the same "server_version" and the same "row_checksum"

    @negative
    Scenario: delivering a row in one scope does not consume the other scope's progress
      Given the harness has committed and capture has materialized:
        """
        INSERT INTO public.tasks (id, list_id, also_list, title) VALUES ('t-7', 'a', 'b', 'shared v1');
        """
      And the harness client "H" of user "alice" has completed a sync
      And the harness has recorded the cursor of "H" for scope "list:b" as "b0"
      And the harness has committed and capture has materialized:
        """
        UPDATE public.tasks SET title = 'shared v2' WHERE id = 't-7';
        """
      And the harness has committed and capture has materialized:
        """
        UPDATE public.tasks SET title = 'shared v3' WHERE id = 't-7';
        """
      And the harness client "H" pulls with limit 10 presenting its current cursors
      When the harness client "H" pulls with limit 10 presenting cursor "b0" for scope "list:b"
      Then the pull response lists exactly these changes:
        | scope  | table | op     | pk  | title     |
        | list:b | tasks | upsert | t-7 | shared v3 |
      And member "has_more" is false

  @cap:provision @cap:scopes @cap:sourceSql @cap:capture
  Rule: the logical table and the typed key are compared as typed values, never as a joined string

    @negative
    Scenario: table and key pairs that join to the same string stay two rows
      Given a registered table "doc" with columns:
        | column | type   | nullable | key |
        | id     | string | false    | yes |
        | body   | string | false    | no  |
      And a registered table "doc:x" with columns:
        | column | type   | nullable | key |
        | id     | string | false    | yes |
        | body   | string | false    | no  |
      And table "doc" places each row in scope "list:a"
      And table "doc:x" places each row in scope "list:a"
      And the harness client "H" of user "alice" has completed a sync
      And the harness has committed and capture has materialized:
        """
        INSERT INTO public."doc" (id, body) VALUES ('x:1', 'in doc');
        INSERT INTO public."doc:x" (id, body) VALUES ('1', 'in doc:x');
        """
      When the harness client "H" pulls with limit 10 presenting its current cursors
      Then the pull response lists exactly these changes:
        | scope  | table | op     | pk  | body     |
        | list:a | doc   | upsert | x:1 | in doc   |
        | list:a | doc:x | upsert | 1   | in doc:x |

    @negative
    Scenario: int64 keys that a floating-point parse would merge stay two rows
      Given a registered table "ledgers" with columns:
        | column | type   | nullable | key |
        | id     | int64  | false    | yes |
        | amount | string | false    | no  |
      And table "ledgers" places each row in scope "list:a"
      And the harness client "H" of user "alice" has completed a sync
      And the harness has committed and capture has materialized:
        """
        INSERT INTO public.ledgers (id, amount) VALUES (9007199254740992, 'low'), (9007199254740993, 'high');
        """
      When the harness client "H" pulls with limit 10 presenting its current cursors
      Then the response status is 200
      And the pull response holds 2 changes
      And the "pk" members of the changes, compared as raw JSON tokens without numeric conversion, are exactly:
        | pk                        |
        | {"id":"9007199254740992"} |
        | {"id":"9007199254740993"} |

    Scenario Outline: each key type has its canonical wire form in "pk"
      Given a registered table "keyed" with columns:
        | column | type   | nullable | key |
        | id     | <type> | false    | yes |
        | note   | string | false    | no  |
      And table "keyed" places each row in scope "list:a"
      And the harness client "H" of user "alice" has completed a sync
      And the harness has committed and capture has materialized:
        """
        INSERT INTO public.keyed (id, note) VALUES (<sql_value>, 'n');
        """
      When the harness client "H" pulls with limit 10 presenting its current cursors
      Then the "pk" member of the only change, compared as raw JSON tokens without numeric conversion, is <wire_pk>

      Examples:
        | type   | sql_value        | wire_pk                   |
        | int    | 7                | {"id":7}                  |
        | int64  | 9007199254740993 | {"id":"9007199254740993"} |
        | string | '7'              | {"id":"7"}                |

  @cap:provision @cap:scopes @cap:sourceSql @cap:capture
  Rule: only the greatest eligible position of a key within its scope is retained

    Scenario: several updates between pulls arrive as one upsert with the last version
      Given the harness client "H" of user "alice" has completed a sync
      And the harness commits on the source database:
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
      And capture has materialized every committed source transaction
      When the harness client "H" pulls with limit 10 presenting its current cursors
      Then the pull response lists exactly these changes:
        | scope  | table | op     | pk  | title |
        | list:a | tasks | upsert | t-1 | v3    |

    Scenario: an insert followed by a delete arrives as one delete
      Given the harness client "H" of user "alice" has completed a sync
      And the harness commits on the source database:
        """
        INSERT INTO public.tasks (id, list_id, also_list, title) VALUES ('t-1', 'a', NULL, 'short-lived');
        """
      And the harness commits on the source database:
        """
        DELETE FROM public.tasks WHERE id = 't-1';
        """
      And capture has materialized every committed source transaction
      When the harness client "H" pulls with limit 10 presenting its current cursors
      Then the pull response lists exactly these changes:
        | scope  | table | op     | pk  |
        | list:a | tasks | delete | t-1 |

    Scenario: a row's later version outranks candidates committed in between
      Given the harness client "H" of user "alice" has completed a sync
      And the harness commits on the source database:
        """
        INSERT INTO public.tasks (id, list_id, also_list, title) VALUES ('r', 'a', NULL, 'R v1');
        """
      And the harness commits on the source database:
        """
        INSERT INTO public.tasks (id, list_id, also_list, title) VALUES ('s-1', 'a', NULL, 'S1');
        """
      And the harness commits on the source database:
        """
        UPDATE public.tasks SET title = 'R v2' WHERE id = 'r';
        """
      And capture has materialized every committed source transaction
      When the harness client "H" pulls with limit 10 presenting its current cursors
      Then the pull response lists exactly these changes:
        | scope  | table | op     | pk  | title |
        | list:a | tasks | upsert | s-1 | S1    |
        | list:a | tasks | upsert | r   | R v2  |
