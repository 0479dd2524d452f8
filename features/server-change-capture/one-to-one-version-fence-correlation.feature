@SYNC-CAP-012 @server @internal
Feature: One To One Version Fence Correlation
  Each row operation on a registered table fires one AFTER fence that allocates
  the row's next opaque version and emits a transactional fence message. The
  worker later pairs each decoded row event with its fence: per row identity
  (relation identity plus key), the k-th operation with the fence of the k-th
  lowest registered-DML ordinal, matching kind, fence ID, relation, operation,
  keys and version. A missing, extra or misordered fence means a version the
  wire would show does not belong to the change it describes, so capture must
  stop. Nested triggers that change a row before its earlier fence fires, and
  COPY FREEZE, defeat the order check and are refused. Until a client's accepted
  fences are covered by materialization, its pull and rebuild answer
  capture_pending. The harness drives these cases through SQL and push and
  reads fences, events and SQLSTATEs through server inspection.

  Background:
    Given a registered table "tasks" with columns:
      | column   | type   | key |
      | id       | string | yes |
      | owner_id | string | no  |
      | title    | string | no  |
    And table "tasks" places each row in scope "user:{owner_id}"
    And user "alice" is assigned scope "user:alice"
    And the harness has committed and capture has materialized:
      """
      INSERT INTO public.tasks (id, owner_id, title) VALUES ('t-1', 'alice', 'v0'), ('t-2', 'alice', 'v0');
      """
    And client "A" of user "alice" has connected and rebuilt every assigned scope

  Rule: every actual registered row operation emits exactly one row-level AFTER fence

    @cap:provision @cap:sourceSql @cap:capture @cap:inspect
    Scenario Outline: <statement> emits <fences> fence(s)
      When the harness commits on the source database:
        """
        <sql>
        """
      And capture has materialized every committed source transaction
      Then server inspection shows <fences> fence(s) for that transaction with strictly increasing registered-DML ordinals starting at 1
      And server inspection shows <fences> new row version(s) for row "t-1" of table "tasks"

      Examples:
        | statement                        | sql                                                                                                                      | fences |
        | three updates of one row         | UPDATE public.tasks SET title = 'v1' WHERE id = 't-1'; UPDATE public.tasks SET title = 'v2' WHERE id = 't-1'; UPDATE public.tasks SET title = 'v3' WHERE id = 't-1'; | 3 |
        | ON CONFLICT DO UPDATE on a row   | INSERT INTO public.tasks (id, owner_id, title) VALUES ('t-1', 'alice', 'upserted') ON CONFLICT (id) DO UPDATE SET title = EXCLUDED.title; | 1 |
        | ON CONFLICT DO NOTHING on a row  | INSERT INTO public.tasks (id, owner_id, title) VALUES ('t-1', 'alice', 'ignored') ON CONFLICT (id) DO NOTHING;             | 0      |
        | an update matching no row        | UPDATE public.tasks SET title = 'none' WHERE id = 'missing';                                                              | 0      |

    @cap:provision @cap:sourceSql @cap:capture
    Scenario: repeated same-row updates in one transaction stay distinct fences and pull as one final upsert
      When the harness commits on the source database:
        """
        UPDATE public.tasks SET title = 'v1' WHERE id = 't-1';
        UPDATE public.tasks SET title = 'v2' WHERE id = 't-1';
        UPDATE public.tasks SET title = 'v3' WHERE id = 't-1';
        """
      And capture has materialized every committed source transaction
      And client "A" pulls
      Then the pull response lists exactly these changes:
        | scope      | table | op     | pk  |
        | user:alice | tasks | upsert | t-1 |
      And the pulled row "t-1" has title "v3"

  Rule: per row identity the k-th row operation correlates with the fence of the k-th lowest registered-DML ordinal, matching kind, fence ID, relation, operation, keys and version

    @cap:provision @cap:sourceSql @cap:capture @cap:inspect
    Scenario: interleaved operations on two rows pair up per row and may interleave across rows
      When the harness commits on the source database:
        """
        UPDATE public.tasks SET title = 'a1' WHERE id = 't-1';
        UPDATE public.tasks SET title = 'b1' WHERE id IN ('t-1', 't-2');
        DELETE FROM public.tasks WHERE id = 't-2';
        UPDATE public.tasks SET title = 'a3' WHERE id = 't-1';
        """
      And capture has materialized every committed source transaction
      Then server inspection pairs the events and fences of that transaction as:
        | row | operation | event rank in row | fence ordinal rank in row |
        | t-1 | update    | 1                 | 1                         |
        | t-1 | update    | 2                 | 2                         |
        | t-1 | update    | 3                 | 3                         |
        | t-2 | update    | 1                 | 1                         |
        | t-2 | delete    | 2                 | 2                         |
      And every pair agrees on registration kind "synced", fence ID, relation identity, operation, keys and transition version
      And every fence ID of that transaction is unique and never seen before
      And server inspection shows no active quarantine record

  Rule: a synced fence carries table identity and a capture-dependency fence carries none and uses the capture-key identity

    @cap:provision @cap:sourceSql @cap:capture @cap:inspect
    Scenario: fence identity follows the registration kind
      Given a capture-only dependency registration for table "public.owners" with key column "id"
      When the harness commits on the source database:
        """
        INSERT INTO public.owners (id, display) VALUES ('alice', 'Alice');
        UPDATE public.tasks SET title = 'v1' WHERE id = 't-1';
        """
      And the capture worker completes 3 polls
      Then server inspection shows the fence of row "t-1" with registration kind "synced", the table ID of "tasks" and old and new record ID "t-1"
      And server inspection shows the fence of owner "alice" with registration kind "capture_dependency", no table ID and capture key {"id":"alice"}

  Rule: a nested statement that changes a row before an earlier change's fence fires fails the transaction with SQLSTATE 27000

    @negative @cap:provision @cap:sourceSql @cap:capture @cap:inspect
    Scenario Outline: an AFTER UPDATE trigger named "<name>" that touches its own row <result>
      Given the source table "public.tasks" has an AFTER UPDATE row trigger "<name>" guarded by "pg_trigger_depth() = 1" that sets title = title || '!' on the same row
      When the harness runs the nested update on the source database:
        """
        UPDATE public.tasks SET title = 'nested' WHERE id = 't-1';
        """
      Then <outcome>

      Examples:
        | name      | result                 | outcome                                                                                                |
        | aaa_touch | fails with 27000       | the statement fails with SQLSTATE "27000" and row "t-1" still has title "v0"                         |
        | zzz_touch | succeeds with 2 fences | the statement succeeds and, once materialized, server inspection shows 2 ordered fences and 2 new row versions for row "t-1" |

  Rule: COPY ... FREEZE into a registered table fails with SQLSTATE 0A000

    # TRUNCATE of a registered relation is refused with 0A000 at the source (decision 10), which
    # would answer before COPY ran: the session bypasses that guard as the table's owner could, so
    # the frozen load itself is what must be refused (decision 267). The rows come from a server
    # program because the harness's SQL session has no COPY input stream.
    @negative @cap:provision @cap:sourceSql
    Scenario: a frozen bulk load is refused and rolled back
      When the harness runs on the source database:
        """
        ALTER TABLE public.tasks DISABLE TRIGGER synchro_capture_truncate_guard;
        TRUNCATE public.tasks;
        COPY public.tasks (id, owner_id, title) FROM PROGRAM 'printf "t-9\\talice\\tfrozen\\n"' WITH (FREEZE);
        """
      Then the statement fails with SQLSTATE "0A000"
      And the source table "public.tasks" still holds rows "t-1, t-2"

  Rule: a missing, duplicate, extra, reordered, reused or malformed correlation blocks capture

    @negative @cap:provision @cap:sourceSql @cap:capture @cap:inspect
    Scenario Outline: <defect> is a blocking correlation failure and the write is never pulled
      When the harness commits on the source database:
        """
        <sql>
        """
      And the capture worker completes 3 polls
      Then server inspection shows one active quarantine record with failure class "<class>"
      And server inspection reports the capture check "<check>" as "failed"
      When client "A" pulls
      Then the pull either answers 503 "temporary_unavailable" with reason "capture_blocked" or lists no change for rows "t-1"

      Examples:
        | defect                                | sql                                                                                                                                   | class                    | check            |
        | a write with the fence trigger disabled | ALTER TABLE public.tasks DISABLE TRIGGER synchro_capture_fence; UPDATE public.tasks SET title = 'unfenced' WHERE id = 't-1'; ALTER TABLE public.tasks ENABLE TRIGGER synchro_capture_fence; | fence_correlation_failed | poison |
        | a write with session_replication_role replica | SET session_replication_role = replica; UPDATE public.tasks SET title = 'bypassed' WHERE id = 't-1'; RESET session_replication_role; | fence_correlation_failed | poison |
        | an extra forged fence message          | UPDATE public.tasks SET title = 'v1' WHERE id = 't-1'; SELECT pg_logical_emit_message(true, 'synchro_fence', '{"t":"forged","k":"t-1","v":"forged","s":"live"}'); | fence_correlation_failed | poison           |

    @negative @cap:provision @cap:sourceSql @cap:capture @cap:inspect
    Scenario Outline: a fence message <tamper> is a blocking correlation failure
      When the harness commits an update of row "t-1" whose fence message is <tamper>
      And the capture worker completes 3 polls
      Then server inspection shows one active quarantine record with failure class "fence_correlation_failed"

      Examples:
        | tamper                                                   |
        | duplicated with the same fence ID                        |
        | given the fence ID of an already materialized fence      |
        | emitted with the version of another row                  |
        | emitted with operation "delete" instead of "update"      |
        | emitted with a registered-DML ordinal lower than the previous fence of the row |
        | truncated to invalid JSON                                |

  Rule: pull or rebuild while an accepted fence lacks WAL materialization or activated reset-baseline coverage returns 503 capture_pending without progress

    @cap:provision @cap:capture
    Scenario: the pushing client waits while other clients proceed
      Given user "bob" is assigned scope "user:bob"
      And client "B" of user "bob" has connected and rebuilt every assigned scope
      And the capture worker is paused
      When client "A" pushes a batch with:
        | mutation_id                          | operation | table | pk  | base_version | title   |
        | 5e7f9a1b-4d6c-4f8e-9a0b-2c3d4e5f6a04 | update    | tasks | t-1 | current      | pending |
      Then the push outcome of mutation "5e7f9a1b-4d6c-4f8e-9a0b-2c3d4e5f6a04" is "applied"
      When client "A" pulls
      Then the response status is 503 with error code "capture_pending"
      And the error body has "retryable" true and no member "changes", "scope_cursors" or "checksums"
      And no scope cursor of client "A" advanced
      When client "A" requests a rebuild of scope "user:alice"
      Then the response status is 503 with error code "capture_pending"
      And server inspection shows no rebuild session for client "A"
      When client "B" pulls
      Then the response status is 200
      When the capture worker resumes
      And capture has materialized every committed source transaction
      And client "A" pulls
      Then the pull response lists exactly these changes:
        | scope      | table | op     | pk  |
        | user:alice | tasks | upsert | t-1 |
