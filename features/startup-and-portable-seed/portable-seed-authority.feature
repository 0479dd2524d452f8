@SYNC-SEED-002 @server
Feature: Portable Seed Authority
  A seed file is copied into every installation of an app, so it may only hold
  data every user may read: the shared scopes the server explicitly declares
  portable. The export must never include per-user data and must never decide
  portability for itself, for example by exporting any scope that happens to
  have rows. The harness places rows in user scopes, granted team scopes,
  non-portable shared scopes and a portable shared scope. It then exports and
  checks that the artifact and its export manifest hold exactly the declared
  portable scopes and only their rows.

  Background:
    Given a registered table "products" with columns:
      | column | type   | key | nullable |
      | id     | string | yes | no       |
      | name   | string | no  | no       |
    And table "products" places each row in scope "catalog_public"
    And a registered table "staff_docs" with columns:
      | column | type   | key | nullable |
      | id     | string | yes | no       |
      | body   | string | no  | no       |
    And table "staff_docs" places each row in scope "staff_shared"
    And a registered table "tasks" with columns:
      | column   | type   | key | nullable |
      | id       | string | yes | no       |
      | owner_id | string | no  | no       |
      | title    | string | no  | no       |
    And table "tasks" places each row in scope "user:{owner_id}"
    And a registered table "docs" with columns:
      | column    | type   | key | nullable |
      | id        | string | yes | no       |
      | scope_ids | string | no  | no       |
      | body      | string | no  | no       |
    And table "docs" places each row in one scope for each comma-separated scope ID in "scope_ids"
    And shared scope "catalog_public" is registered as portable
    And shared scope "staff_shared" is registered as not portable
    And user "alice" is assigned scope "team:t_1"
    And the harness commits on the source database:
      """
      INSERT INTO public.products (id, name) VALUES ('p1', 'Kettle'), ('p2', 'Teapot');
      INSERT INTO public.staff_docs (id, body) VALUES ('s1', 'Rota');
      INSERT INTO public.tasks (id, owner_id, title) VALUES ('t1', 'alice', 'Dentist'), ('t2', 'bob', 'Gym');
      INSERT INTO public.docs (id, scope_ids, body) VALUES
        ('d1', 'catalog_public', 'Manual'),
        ('d2', 'user:alice', 'Diary'),
        ('d3', 'catalog_public,user:alice', 'Shared note'),
        ('d4', 'team:t_1', 'Plan');
      """
    And capture has materialized every committed source transaction

  Rule: An exported seed contains only the scopes the server declares portable shared scopes

    @cap:seed @cap:scopes @cap:sourceSql
    Scenario: The artifact holds exactly the declared portable scope and its rows
      When the operator exports a portable seed to "seed-1.sqlite" with page limit 1000
      Then the export manifest lists in "portable_scopes" exactly the scope IDs ["catalog_public"]
      And the seed artifact "seed-1.sqlite" holds exactly these rows:
        | table    | id |
        | products | p1 |
        | products | p2 |
        | docs     | d1 |
        | docs     | d3 |
      And the seed artifact "seed-1.sqlite" holds provenance only for scope "catalog_public"
      And the export used no user credential and the proxy recorded no sync request during it

    @cap:seed @cap:scopes @cap:sourceSql
    Scenario: Declaring a scope portable is what puts it in the next export
      Given the operator registers shared scope "staff_shared" as portable
      When the operator exports a portable seed to "seed-2.sqlite" with page limit 1000
      Then the export manifest lists in "portable_scopes" exactly the scope IDs ["catalog_public","staff_shared"]
      And the seed artifact "seed-2.sqlite" holds row "s1" of "staff_docs"

  Rule: An exported seed never contains auth-scoped user data, and portability is never inferred from rows

    @negative @cap:seed @cap:scopes @cap:sourceSql
    Scenario Outline: Scope "<scope>" with rows is not exported because it is <reason>
      When the operator exports a portable seed to "seed-1.sqlite" with page limit 1000
      Then the export manifest does not list scope "<scope>"
      And the seed artifact "seed-1.sqlite" holds no row whose only scope is "<scope>"
      And the seed artifact "seed-1.sqlite" holds no provenance for scope "<scope>"

      Examples:
        | scope        | reason                                   |
        | user:alice   | a default user scope                     |
        | user:bob     | a default user scope of another user     |
        | team:t_1     | an explicit user grant                   |
        | staff_shared | a shared scope registered as not portable |

    @negative @cap:seed @cap:scopes @cap:sourceSql
    Scenario: A row in a portable scope and a user scope is exported without its user provenance
      When the operator exports a portable seed to "seed-1.sqlite" with page limit 1000
      Then the seed artifact "seed-1.sqlite" holds row "d3" of "docs" with provenance exactly ["catalog_public"]
      And the seed artifact "seed-1.sqlite" does not hold row "d2" of "docs"

    @negative @cap:seed @cap:scopes @cap:sourceSql
    Scenario: Withdrawing the portable declaration removes the scope from later exports
      Given the operator registers shared scope "catalog_public" as not portable
      When the operator exports a portable seed to "seed-3.sqlite" with page limit 1000
      Then the export manifest lists in "portable_scopes" exactly the scope IDs []
      And the seed artifact "seed-3.sqlite" holds no row of "products" or "docs"
