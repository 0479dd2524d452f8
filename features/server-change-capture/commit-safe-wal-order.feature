@SYNC-CAP-003 @server @internal
Feature: Commit Safe WAL Order
  Clients must see changes in the order the database made them durable, and a
  cursor must point at a place that exists in that order. The worker therefore
  sorts source transactions by commit LSN, sorts the row events of one
  transaction by their position in the decoded transaction before any filter
  drops some of them, starts an empty generation at generation_start and closes
  every processed transaction with a transaction_end point. Sequences, clocks,
  notifications, table names and poll order do not describe commit order and
  must never be used to order or refine it. The harness interleaves
  transactions on two source connections, seeds misleading timestamps and
  sequence values, and checks the order of pulled changes, paging without gaps
  or repeats, and the stream positions that server inspection reports.

  Background:
    Given a registered table "tasks" with columns:
      | column     | type     | key |
      | id         | string   | yes |
      | owner_id   | string   | no  |
      | seq_no     | int64    | no  |
      | updated_at | datetime | no  |
    And table "tasks" places each row in scope "user:{owner_id}"
    And user "alice" is assigned scope "user:alice"
    And client "A" of user "alice" has connected and rebuilt every assigned scope

  Rule: source transactions are ordered by commit LSN

    @cap:provision @cap:sourceSql @cap:capture
    Scenario: the transaction that commits first is pulled first even though it began second
      When source connection "c1" runs:
        """
        BEGIN;
        INSERT INTO public.tasks (id, owner_id, seq_no, updated_at) VALUES ('t-a', 'alice', 1, '2030-01-01 00:00:00+00');
        """
      And source connection "c2" runs:
        """
        BEGIN;
        INSERT INTO public.tasks (id, owner_id, seq_no, updated_at) VALUES ('t-b', 'alice', 2, '2020-01-01 00:00:00+00');
        COMMIT;
        """
      And source connection "c1" runs:
        """
        COMMIT;
        """
      And capture has materialized every committed source transaction
      And client "A" pulls
      Then the pull response lists exactly these changes in this order:
        | scope      | table | op     | pk  |
        | user:alice | tasks | upsert | t-b |
        | user:alice | tasks | upsert | t-a |

    @cap:provision @cap:sourceSql @cap:capture
    Scenario: two interleaved transactions decoded in the same poll are materialized in commit order, not start order
      Given the capture worker is paused
      When source connection "c1" runs:
        """
        BEGIN;
        INSERT INTO public.tasks (id, owner_id, seq_no, updated_at) VALUES ('t-a', 'alice', 1, '2030-01-01 00:00:00+00');
        """
      And source connection "c2" runs:
        """
        BEGIN;
        INSERT INTO public.tasks (id, owner_id, seq_no, updated_at) VALUES ('t-b', 'alice', 2, '2020-01-01 00:00:00+00');
        COMMIT;
        """
      And source connection "c1" runs:
        """
        COMMIT;
        """
      And the capture worker resumes
      And capture has materialized every committed source transaction
      And client "A" pulls
      Then the pull response lists exactly these changes in this order:
        | scope      | table | op     | pk  |
        | user:alice | tasks | upsert | t-b |
        | user:alice | tasks | upsert | t-a |

  Rule: the events of one transaction are ordered by their pre-filter source ordinal

    @cap:provision @cap:sourceSql @cap:capture
    Scenario: rows written in one transaction are pulled in statement order, not key order
      When the harness commits on the source database:
        """
        INSERT INTO public.tasks (id, owner_id, seq_no, updated_at) VALUES ('t-z', 'alice', 9, '2030-01-01 00:00:00+00');
        INSERT INTO public.tasks (id, owner_id, seq_no, updated_at) VALUES ('t-m', 'alice', 1, '2020-01-01 00:00:00+00');
        """
      And capture has materialized every committed source transaction
      And client "A" pulls
      Then the pull response lists exactly these changes in this order:
        | scope      | table | op     | pk  |
        | user:alice | tasks | upsert | t-z |
        | user:alice | tasks | upsert | t-m |

    @cap:provision @cap:sourceSql @cap:capture @cap:inspect
    Scenario: an event ordinal counts the filtered capture-dependency event before it
      Given a capture-only dependency registration for table "public.owners" with key column "id"
      When the harness commits on the source database:
        """
        INSERT INTO public.owners (id, display) VALUES ('alice', 'Alice');
        INSERT INTO public.tasks (id, owner_id, seq_no, updated_at) VALUES ('t-1', 'alice', 1, '2024-01-01 00:00:00+00');
        """
      And capture has materialized every committed source transaction
      Then server inspection shows the event of row "t-1" of table "tasks" with event ordinal 1
      And server inspection shows the event of row "alice" of relation "public.owners" with event ordinal 0

  Rule: an empty generation is represented by generation_start

    # Registering a table is itself a processed source transaction (its registry activation message),
    # so the generation the Background ends in is not empty; a stream reset starts one that is.
    @cap:provision @cap:capture @cap:inspect
    Scenario: a new stream generation starts at generation_start and an empty scope rebuilds to no records
      Given no source transaction has touched a registered table since installation
      When the operator resets the capture stream to a new generation
      Then server inspection shows the durable pull boundary at position kind "generation_start"
      When client "A" rebuilds scope "user:alice" to its final page
      Then the final rebuild page holds 0 records and a non-null "final_scope_cursor"
      And server inspection decodes that "final_scope_cursor" to position kind "generation_start" of the current stream generation
      When client "A" pulls
      Then the response status is 200
      And the pull response lists no change for table "tasks"

  Rule: every fully processed transaction is represented by its transaction_end point

    @cap:provision @cap:sourceSql @cap:capture @cap:inspect
    Scenario: a transaction with no registered row event still gets a completed record and a transaction_end boundary
      When the harness commits on the source database and records the commit position as "probe":
        """
        SELECT pg_logical_emit_message(true, 'harness_probe', 'x');
        """
      And capture has materialized every committed source transaction
      Then server inspection shows either a completed transaction record with 0 events for transaction "probe" or a processed boundary at or after its end
      And server inspection shows the slot acknowledgement at or after the end of transaction "probe"

    @cap:provision @cap:sourceSql @cap:capture
    Scenario Outline: paging with limit 1 resumes between effects with no gap and no repeat
      Given user "alice" is assigned scope "shared:board"
      And table "tasks" places each row in scopes "<scopes>"
      And client "A" has connected and rebuilt every assigned scope
      When the harness commits on the source database:
        """
        <sql>
        """
      And capture has materialized every committed source transaction
      And client "A" pulls pages with limit 1 until "has_more" is false
      Then the concatenated pages list exactly these changes:
        | scope   | table | op     | pk   |
        | <first> | tasks | upsert | <k1> |
        | <second>| tasks | upsert | <k2> |
      And every page but the last has "has_more" true

      Examples: two events in one scope
        | scopes     | sql                                                                                                                                                      | first      | second     | k1  | k2  |
        | user:{owner_id} | INSERT INTO public.tasks (id, owner_id, seq_no, updated_at) VALUES ('t-1', 'alice', 1, '2024-01-01 00:00:00+00'), ('t-2', 'alice', 2, '2024-01-01 00:00:00+00'); | user:alice | user:alice | t-1 | t-2 |

      Examples: one event fanned out to two scopes
        | scopes                       | sql                                                                                                              | first        | second     | k1  | k2  |
        | user:{owner_id},shared:board | INSERT INTO public.tasks (id, owner_id, seq_no, updated_at) VALUES ('t-3', 'alice', 3, '2024-01-01 00:00:00+00'); | shared:board | user:alice | t-3 | t-3 |

  Rule: order is never taken from a sequence, a timestamp, a notification, a table name or poll order

    @negative @cap:provision @cap:sourceSql @cap:capture
    Scenario Outline: a misleading <source> does not change the pulled order
      When the harness commits on the source database:
        """
        INSERT INTO public.tasks (id, owner_id, seq_no, updated_at) VALUES ('t-1', 'alice', <seq_1>, '<at_1>');
        """
      And the harness commits on the source database:
        """
        INSERT INTO public.tasks (id, owner_id, seq_no, updated_at) VALUES ('t-2', 'alice', <seq_2>, '<at_2>');
        """
      And capture has materialized every committed source transaction
      And client "A" pulls
      Then the pull response lists exactly these changes in this order:
        | scope      | table | op     | pk  |
        | user:alice | tasks | upsert | t-1 |
        | user:alice | tasks | upsert | t-2 |

      Examples:
        | source           | seq_1 | at_1                   | seq_2 | at_2                   |
        | sequence value   | 900   | 2024-01-01 00:00:00+00 | 1     | 2024-01-01 00:00:00+00 |
        | timestamp column | 1     | 2039-12-31 00:00:00+00 | 2     | 2001-01-01 00:00:00+00 |

    @negative @cap:provision @cap:sourceSql @cap:capture
    Scenario: a table whose name sorts first does not jump ahead of an earlier commit
      Given a registered table "aaa_notes" with columns:
        | column   | type   | key |
        | id       | string | yes |
        | owner_id | string | no  |
      And table "aaa_notes" places each row in scope "user:{owner_id}"
      And client "A" has connected and rebuilt every assigned scope
      When the harness commits on the source database:
        """
        INSERT INTO public.tasks (id, owner_id, seq_no, updated_at) VALUES ('t-1', 'alice', 1, '2024-01-01 00:00:00+00');
        """
      And the harness commits on the source database:
        """
        INSERT INTO public.aaa_notes (id, owner_id) VALUES ('n-1', 'alice');
        """
      And capture has materialized every committed source transaction
      And client "A" pulls
      Then the pull response lists exactly these changes in this order:
        | scope      | table     | op     | pk  |
        | user:alice | tasks     | upsert | t-1 |
        | user:alice | aaa_notes | upsert | n-1 |

    @negative @cap:provision @cap:sourceSql @cap:capture
    Scenario: a notification sent before commit does not publish the row early
      Given the capture worker is paused
      When source connection "c1" runs:
        """
        BEGIN;
        INSERT INTO public.tasks (id, owner_id, seq_no, updated_at) VALUES ('t-n', 'alice', 1, '2024-01-01 00:00:00+00');
        NOTIFY synchro_registry;
        """
      And the capture worker resumes
      And client "A" pulls
      Then the pull response lists no change for table "tasks"
      When source connection "c1" runs:
        """
        COMMIT;
        """
      And capture has materialized every committed source transaction
      And client "A" pulls
      Then the pull response lists exactly these changes in this order:
        | scope      | table | op     | pk  |
        | user:alice | tasks | upsert | t-n |

  Rule: no boundary is issued without a defined stream point

    @negative @cap:provision @cap:sourceSql @cap:capture @cap:inspect
    Scenario: every cursor and rebuild boundary the server issues decodes to a defined point of the current generation
      When the harness commits on the source database:
        """
        INSERT INTO public.tasks (id, owner_id, seq_no, updated_at) VALUES ('t-1', 'alice', 1, '2024-01-01 00:00:00+00'), ('t-2', 'alice', 2, '2024-01-01 00:00:00+00');
        """
      And capture has materialized every committed source transaction
      And client "A" pulls pages with limit 1 until "has_more" is false
      And client "A" rebuilds scope "user:alice" to its final page
      Then server inspection decodes every cursor issued to client "A" to position kind "generation_start", "effect" or "transaction_end" of the current stream generation
      And no decoded "effect" position names an effect that server inspection does not hold
