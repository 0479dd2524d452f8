@SYNC-LOCAL-005 @client
Feature: Provenance Correctness
  A row of a multi-scope table may be visible through several scopes at once.
  The client must know exactly which of its active scopes justify each row.
  That knowledge decides when a row may disappear and what goes into each
  scope's digest. Missing provenance deletes a row too early. Stale
  provenance keeps a row the user may no longer see. Provenance attached to
  the wrong row corrupts both. The harness moves rows between scopes on the
  server, grants and revokes scopes, and compares the client's provenance
  (scope, table, record) with the membership the server applied. It also
  checks that a row whose provenance is not empty is never removed.

  Background:
    Given a registered table "notes" with columns:
      | column    | type   | key | nullable |
      | id        | string | yes | no       |
      | team_ids  | string | no  | no       |
      | body      | string | no  | no       |
    And table "notes" places each row in one scope "team:{id}" for each comma-separated id in "team_ids"
    And a registered table "links" with columns:
      | column    | type   | key | nullable |
      | id        | string | yes | no       |
      | team_ids  | string | no  | no       |
      | url       | string | no  | no       |
    And table "links" places each row in one scope "team:{id}" for each comma-separated id in "team_ids"
    And user "alice" is assigned scope "team:t_1"
    And user "alice" is assigned scope "team:t_2"
    And the harness commits on the source database:
      """
      INSERT INTO public.notes (id, team_ids, body) VALUES ('k1', 't_1,t_2', 'shared'), ('k2', 't_1', 'only one');
      INSERT INTO public.links (id, team_ids, url) VALUES ('k1', 't_2', 'https://example.org');
      """
    And capture has materialized every committed source transaction
    And client "A" of user "alice" has connected and rebuilt every assigned scope

  Rule: Local metadata records exactly the active scopes that currently justify each row

    @cap:scopes @cap:sourceSql
    Scenario: Provenance lists every justifying scope per table and record, and nothing else
      Then client "A" provenance is exactly:
        | scope    | table | record |
        | team:t_1 | notes | k1     |
        | team:t_2 | notes | k1     |
        | team:t_1 | notes | k2     |
        | team:t_2 | links | k1     |

    @cap:scopes @cap:sourceSql
    Scenario: A row that moves between scopes carries only its new provenance
      When the harness commits on the source database:
        """
        UPDATE public.notes SET team_ids = 't_2' WHERE id = 'k2';
        """
      And capture has materialized every committed source transaction
      And client "A" syncs
      Then client "A" provenance for row "k2" of "notes" is exactly ["team:t_2"]
      And client "A" still has row "k2" of "notes"

    @cap:scopes @cap:sourceSql
    Scenario: A revoked scope disappears from provenance while the other scope keeps the row
      When the operator revokes scope "team:t_1" from user "alice"
      And client "A" syncs
      Then client "A" provenance is exactly:
        | scope    | table | record |
        | team:t_2 | notes | k1     |
        | team:t_2 | links | k1     |
      And client "A" still has row "k1" of "notes" and row "k1" of "links"
      And client "A" no longer has row "k2" of "notes"
      And client "A" inspection shows no mutation

    @property @cap:scopes @cap:sourceSql
    Scenario: For many generated membership histories the client's provenance equals the server's membership
      When for many generated histories the harness applies, with a sync of client "A" after each step, a random sequence of 1 to 12 steps drawn from: set "team_ids" of "k1", "k2" or a new row of "notes" or "links" to a random subset of "t_1", "t_2", "t_3"; delete a row; grant or revoke "team:t_1", "team:t_2" or "team:t_3" for user "alice"
      Then after every step client "A" provenance equals, for each row the server materializes, the set of scopes alice is assigned that contain that row
      And after every step client "A" holds exactly the rows with nonempty provenance

  Rule: Missing, stale or cross-row provenance, and removal of a row with valid provenance, do not happen

    @negative @cap:scopes @cap:sourceSql
    Scenario: A rowless delete in one scope does not remove a row another scope still justifies
      When the harness commits on the source database:
        """
        UPDATE public.notes SET team_ids = 't_2' WHERE id = 'k1';
        """
      And capture has materialized every committed source transaction
      And client "A" syncs
      Then the pull responses to client "A" held a delete of "k1" in scope "team:t_1"
      And client "A" still has row "k1" of "notes"
      And client "A" provenance for row "k1" of "notes" is exactly ["team:t_2"]

    @negative @cap:scopes @cap:sourceSql
    Scenario: Provenance never crosses to another table's row with the same key
      When the harness commits on the source database:
        """
        UPDATE public.links SET team_ids = 't_1' WHERE id = 'k1';
        """
      And capture has materialized every committed source transaction
      And client "A" syncs
      Then client "A" provenance for row "k1" of "links" is exactly ["team:t_1"]
      And client "A" provenance for row "k1" of "notes" is exactly ["team:t_1","team:t_2"]

    @negative @cap:scopes @cap:sourceSql @cap:provision
    Scenario: A rebuild prunes provenance the snapshot no longer justifies
      Given the proxy blocks pull requests from client "A"
      And the harness commits on the source database:
        """
        UPDATE public.notes SET team_ids = 't_2' WHERE id = 'k2';
        """
      And capture has materialized every committed source transaction
      When the operator changes the membership rule of "notes" so that it mints a new membership generation for scope "team:t_1"
      And the proxy unblocks pull requests from client "A"
      And client "A" syncs
      Then client "A" rebuilt scope "team:t_1"
      And client "A" provenance for row "k2" of "notes" does not contain "team:t_1"
