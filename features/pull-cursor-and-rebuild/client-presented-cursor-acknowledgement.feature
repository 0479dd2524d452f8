@SYNC-PULL-007 @server
Feature: Client Presented Cursor Acknowledgement
  The server keeps, per client and scope, a durable checkpoint: the position
  the client has proven it holds. Issuing a cursor proves nothing, because the
  response may be lost or never applied. Only a later successful pull that
  presents a valid cursor for the scope moves the checkpoint, and only
  forward, to the presented position. Selecting candidates, building a
  response, issuing tokens, serving rebuild pages or seeing an older cursor
  never moves it. Compaction trusts this checkpoint, so a checkpoint that runs
  ahead of the client deletes history the client still needs.

  The harness reads checkpoints through server inspection where the adapter
  offers it, and otherwise uses compaction as a black-box probe: a cursor
  whose position was never acknowledged must stay resumable after the scope
  is compacted as far as the server allows.

  Background:
    Given a registered table "tasks" with columns:
      | column    | type   | nullable | key |
      | id        | string | false    | yes |
      | list_id   | string | false    | no  |
      | also_list | string | true     | no  |
      | title     | string | false    | no  |
    And table "tasks" places each row in scope "list:{list_id}"
    And the default scope of user "alice" is revoked
    And user "alice" is assigned scope "list:a"
    And user "alice" is assigned scope "list:b"
    And the harness client "H" of user "alice" has completed a sync
    And the harness has recorded the cursor of "H" for scope "list:a" as "a0"
    And the harness client "H" has pulled presenting cursor "a0" for scope "list:a"
    And the harness has committed and capture has materialized:
      """
      INSERT INTO public.tasks (id, list_id, also_list, title) VALUES ('t-10', 'a', NULL, 'ten'), ('t-11', 'a', NULL, 'eleven');
      """

  @cap:provision @cap:scopes @cap:sourceSql @cap:capture @cap:inspect
  Rule: a checkpoint advances only when a later successful request presents a valid cursor for that scope

    @negative
    Scenario: issuing a cursor does not acknowledge it; presenting it does
      When the harness client "H" pulls with limit 10 presenting cursor "a0" for scope "list:a"
      Then the pull response lists exactly these changes:
        | scope  | table | op     | pk   |
        | list:a | tasks | upsert | t-10 |
        | list:a | tasks | upsert | t-11 |
      And the harness records the cursor issued for scope "list:a" in that response as "a1"
      And server inspection shows the checkpoint of "H" for scope "list:a" at the position of cursor "a0"
      When the harness has committed and capture has materialized:
        """
        INSERT INTO public.tasks (id, list_id, also_list, title) VALUES ('t-12', 'a', NULL, 'twelve');
        """
      And the harness client "H" pulls with limit 10 presenting cursor "a1" for scope "list:a"
      Then the pull response lists exactly these changes:
        | scope  | table | op     | pk   |
        | list:a | tasks | upsert | t-12 |
      And the harness records the cursor issued for scope "list:a" in that response as "a2"
      And server inspection shows the checkpoint of "H" for scope "list:a" at the position of cursor "a1"

  @cap:provision @cap:scopes @cap:sourceSql @cap:capture @cap:inspect
  Rule: a checkpoint moves monotonically and an older cursor never moves it back

    @negative
    Scenario: presenting an older valid cursor replays changes but keeps the checkpoint
      Given the harness client "H" has pulled with limit 10 presenting cursor "a0" for scope "list:a"
      And the harness records the cursor issued for scope "list:a" in that response as "a1"
      And the harness client "H" has pulled presenting cursor "a1" for scope "list:a"
      When the harness client "H" pulls with limit 10 presenting cursor "a0" for scope "list:a"
      Then the response status is 200
      And the pull response lists exactly these changes:
        | scope  | table | op     | pk   |
        | list:a | tasks | upsert | t-10 |
        | list:a | tasks | upsert | t-11 |
      And server inspection shows the checkpoint of "H" for scope "list:a" at the position of cursor "a1"

  @cap:provision @cap:scopes @cap:sourceSql @cap:capture
  Rule: a lost response acknowledges nothing, so the same cursor can be presented again

    Scenario: after a dropped response the same cursor replays the same changes and both issued cursors agree
      Given the harness client "H" pulls with limit 10 presenting cursor "a0" for scope "list:a"
      And the harness records that response as "lost" and the cursor it issued for scope "list:a" as "c1"
      And the harness discards response "lost" without using any other part of it
      When the harness client "H" pulls with limit 10 presenting cursor "a0" for scope "list:a"
      And the harness records that response as "again" and the cursor it issued for scope "list:a" as "c1b"
      Then member "changes" of "lost" and of "again" are byte-identical
      When the harness has committed and capture has materialized:
        """
        INSERT INTO public.tasks (id, list_id, also_list, title) VALUES ('t-12', 'a', NULL, 'twelve');
        """
      And the harness client "H" pulls with limit 10 presenting cursor "c1" for scope "list:a"
      And the harness records that response as "via c1"
      And the harness client "H" pulls with limit 10 presenting cursor "c1b" for scope "list:a"
      And the harness records that response as "via c1b"
      Then member "changes" of "via c1" and of "via c1b" are byte-identical

  @cap:provision @cap:scopes @cap:sourceSql @cap:capture @cap:inspect
  Rule: a failed request acknowledges none of the cursors it presented

    @negative
    Scenario Outline: a rejected pull leaves the checkpoint where it was
      Given the harness client "H" has pulled with limit 10 presenting cursor "a0" for scope "list:a"
      And the harness records the cursor issued for scope "list:a" in that response as "a1"
      When the harness client "H" sends a pull request presenting cursor "a1" for scope "list:a" with <defect>
      Then the response status is 400 with error code "invalid_request"
      And server inspection shows the checkpoint of "H" for scope "list:a" at the position of cursor "a0"

      Examples:
        | defect                                                           |
        | an added scope "list:zzz" with cursor null                       |
        | its cursor for scope "list:b" with its middle character replaced |
        | member "limit" set to 0                                          |
        | member "scope_set_version" set to its current value plus 1       |

  @cap:provision @cap:scopes @cap:sourceSql @cap:capture @cap:inspect
  Rule: rebuild paging never acknowledges; the final cursor is acknowledged by a later pull that presents it

    @negative
    Scenario: a complete rebuild leaves the checkpoint until its final cursor is presented
      When the harness client "H" requests page 1 of a rebuild of "list:a" with limit 1 and rebuild ID "5b1f0e2a-7c3d-4e9f-8a6b-2d4c6e8f0a13"
      And the harness client "H" requests the remaining rebuild pages of "list:a"
      And the harness records the "final_scope_cursor" for "list:a" as "fa"
      And the harness client "H" repeats its request for page 1 of that rebuild
      Then server inspection shows the checkpoint of "H" for scope "list:a" at the position of cursor "a0"
      When the harness client "H" pulls presenting the "final_scope_cursor" for "list:a"
      Then the response status is 200
      And server inspection shows the checkpoint of "H" for scope "list:a" at the position of cursor "fa"

  @cap:provision @cap:scopes @cap:sourceSql @cap:capture @cap:compaction
  Rule: compaction follows acknowledged positions only, so an issued but unpresented cursor protects nothing

    @negative
    Scenario: after compaction the last presented cursor still resumes
      Given the harness client "H" has pulled with limit 10 presenting cursor "a0" for scope "list:a"
      And the harness records the cursor issued for scope "list:a" in that response as "a1"
      When the operator compacts scope "list:a"
      And the harness client "H" pulls with limit 10 presenting cursor "a0" for scope "list:a"
      Then the response status is 200
      And member "rebuild" is []
      And the pull response lists exactly these changes:
        | scope  | table | op     | pk   |
        | list:a | tasks | upsert | t-10 |
        | list:a | tasks | upsert | t-11 |
