@SYNC-PULL-014 @server
Feature: Accepted Write Invalidates Older Rebuild
  A rebuild snapshot staged before the client's own write was accepted shows
  the row without that write; installing it would quietly undo what the user
  just did. So each client has a durable accepted-write epoch. The first
  execution of a push that accepts at least one source write increments it in
  the same transaction as the write; a push whose mutations are all rejected,
  and an exact replay of an earlier batch, leave it alone. Every rebuild
  session and continuation is bound to the epoch current when it was staged,
  and every page and every stored replay compares it before returning data.
  On a mismatch the answer is 409 rebuild_restart_required, with the scope in
  "scope_id", no records and no progress, even after the accepted write has
  been materialized by capture. Other clients' writes do not touch this
  client's epoch.

  The harness starts a rebuild, has the same client (or another) push in
  between pages, and checks which later rebuild requests are still served.

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
    And the harness client "H2" of user "alice" has completed a sync

  @cap:provision @cap:scopes @cap:sourceSql @cap:capture
  Rule: a first push execution that accepts a write invalidates the client's older rebuild pages and replays

    @negative
    Scenario Outline: after the client's accepted write, no request of the older session returns data
      Given the harness client "H" has requested page 1 of a rebuild of "list:a" with limit 2 and rebuild ID "9f3a7b12-5d64-4f80-a1b2-cd4e6f80a1c7"
      And the harness client "H" has requested the next page of that rebuild
      And the harness client "H" pushes a batch with:
        | mutation_id                          | operation | table | pk  | base_version | list_id | title        |
        | 71a00001-0000-4000-8000-000000000001 | insert    | tasks | t-9 |              | a       | written by H |
      And the push outcome of mutation "71a00001-0000-4000-8000-000000000001" is "applied"
      And capture has materialized every committed source transaction
      When the harness client "H" <request>
      Then the response status is 409 with error code "rebuild_restart_required"
      And the error body has "scope_id" equal to "list:a" and "retryable" false
      And the response has no member "/records", no member "/cursor", no member "/final_scope_cursor" and no member "/checksum"

      Examples:
        | request                                        |
        | requests the next page of that rebuild         |
        | repeats its request for page 1 of that rebuild |
        | repeats its request for page 2 of that rebuild |

    @negative
    Scenario: a completed session's final page is not replayed after the client's accepted write
      Given the harness client "H" has requested page 1 of a rebuild of "list:a" with limit 2 and rebuild ID "a04b8c23-6e75-4091-b2c3-de5f7091b2d8"
      And the harness client "H" has requested the remaining rebuild pages of "list:a"
      And the harness client "H" pushes a batch with:
        | mutation_id                          | operation | table | pk  | base_version | list_id | title        |
        | 71a00002-0000-4000-8000-000000000002 | insert    | tasks | t-9 |              | a       | written by H |
      And the push outcome of mutation "71a00002-0000-4000-8000-000000000002" is "applied"
      When the harness client "H" repeats its request for page 3 of that rebuild
      Then the response status is 409 with error code "rebuild_restart_required"
      And the response has no member "/final_scope_cursor" and no member "/checksum"

    @negative
    Scenario: a push whose response was lost still counts, because the epoch moved with the write
      Given the harness client "H" has requested page 1 of a rebuild of "list:a" with limit 2 and rebuild ID "b15c9d34-7f86-41a2-83d4-ef6081a2c3e9"
      And the harness client "H" pushes this batch and discards the response without reading it:
        | mutation_id                          | operation | table | pk  | base_version | list_id | title        |
        | 71a00003-0000-4000-8000-000000000003 | insert    | tasks | t-9 |              | a       | written by H |
      When the harness client "H" requests the next page of that rebuild
      Then the response status is 409 with error code "rebuild_restart_required"

    Scenario: a new attempt after the 409 stages a snapshot that includes the accepted write
      Given the harness client "H" has requested page 1 of a rebuild of "list:a" with limit 2 and rebuild ID "c26dae45-8097-42b3-94e5-f07192b3d4fa"
      And the harness client "H" pushes a batch with:
        | mutation_id                          | operation | table | pk  | base_version | list_id | title        |
        | 71a00004-0000-4000-8000-000000000004 | insert    | tasks | t-9 |              | a       | written by H |
      And the push outcome of mutation "71a00004-0000-4000-8000-000000000004" is "applied"
      And capture has materialized every committed source transaction
      And the harness client "H" requests the next page of that rebuild
      And the response status is 409 with error code "rebuild_restart_required"
      When the harness client "H" requests page 1 of a rebuild of "list:a" with limit 1000 and rebuild ID "d37ebf56-91a8-43c4-a5f6-0182a3c4e50b"
      Then the response status is 200
      And the rebuild pages hold exactly these records:
        | table | pk  | title        |
        | tasks | t-1 | one          |
        | tasks | t-2 | two          |
        | tasks | t-3 | three        |
        | tasks | t-4 | four         |
        | tasks | t-5 | five         |
        | tasks | t-9 | written by H |

  @cap:provision @cap:scopes @cap:sourceSql @cap:capture
  Rule: pushes that accept nothing, exact replays and other clients' writes leave the epoch unchanged

    Scenario: a push whose only mutation is rejected as a conflict leaves the rebuild going
      Given the harness client "H" has requested page 1 of a rebuild of "list:a" with limit 2 and rebuild ID "e48fc067-a2b9-44d5-b607-1293b4d5f61c"
      And the harness client "H" pushes a batch with:
        | mutation_id                          | operation | table | pk  | base_version  | list_id | title          |
        | 71a00005-0000-4000-8000-000000000005 | update    | tasks | t-1 | stale-version |         | edited offline |
      And the rejected outcome of mutation "71a00005-0000-4000-8000-000000000005" has status "conflict" and code "version_conflict"
      When the harness client "H" requests the next page of that rebuild
      Then the response status is 200
      And the rebuild pages hold these records on that page:
        | table | pk  |
        | tasks | t-3 |
        | tasks | t-4 |

    Scenario: an exact replay of a batch accepted before the rebuild began leaves the rebuild going
      Given the harness client "H" pushes a batch with:
        | mutation_id                          | operation | table | pk  | base_version | list_id | title |
        | 71a00006-0000-4000-8000-000000000006 | insert    | tasks | t-8 |              | b       | early |
      And the push outcome of mutation "71a00006-0000-4000-8000-000000000006" is "applied"
      And capture has materialized every committed source transaction
      And the harness client "H" has requested page 1 of a rebuild of "list:a" with limit 2 and rebuild ID "f5a0d178-b3ca-45e6-8718-23a4c5e6f72d"
      When the harness client "H" sends that push batch again byte for byte
      Then the response body is byte-identical to the first response to that batch
      When the harness client "H" requests the next page of that rebuild
      Then the response status is 200
      And the rebuild pages hold these records on that page:
        | table | pk  |
        | tasks | t-3 |
        | tasks | t-4 |

    Scenario: another client's accepted write does not stop this client's rebuild
      Given the harness client "H" has requested page 1 of a rebuild of "list:a" with limit 2 and rebuild ID "06b1e289-c4db-46f7-9829-34b5d6f7a83e"
      And the harness client "H2" pushes a batch with:
        | mutation_id                          | operation | table | pk  | base_version | list_id | title         |
        | 71a00007-0000-4000-8000-000000000007 | insert    | tasks | t-9 |              | a       | written by H2 |
      And the push outcome of mutation "71a00007-0000-4000-8000-000000000007" is "applied"
      And capture has materialized every committed source transaction
      When the harness client "H" requests the next page of that rebuild
      Then the response status is 200
      And the rebuild pages hold these records on that page:
        | table | pk  |
        | tasks | t-3 |
        | tasks | t-4 |
