@SYNC-PROTO-005 @server @client
Feature: Scope Assignment Authority
  Which scopes a client may read is an authorization decision, and it belongs
  to the server alone. For an authenticated user the server's set is the union
  of four sources: the default scope "user:{canonical user id}" (unless an
  operator revoked it), every registered shared scope, the explicit grants
  made with synchro_grant_user_scope, and the results of the one registered
  assignment function. Nothing a client writes in a request adds to that set:
  a scope the server never assigned, another user's scope, a replication
  predicate or a user identity in the JSON is refused, and a client never
  presents a scope it was not given.

  The harness configures each source through the scopes capability, compares
  the scopes reported on connect with the expected union, sends requests that
  name scopes or predicates the user was not given, and checks that a client
  under test only ever presents scopes the server assigned to it.

  Background:
    Given a registered table "tasks" with columns:
      | column   | type   | key |
      | id       | string | yes |
      | owner_id | string | no  |
      | title    | string | no  |
    And table "tasks" places each row in scope "user:{owner_id}"

  @cap:provision @cap:scopes
  Rule: only the server determines the authoritative scope set

    Scenario: the same user gets the same set whatever the client claims to know
      Given client "A" of user "alice" has connected and rebuilt every assigned scope
      When the harness sends a raw connect request as user "alice":
        """
        {"client_id":"alice-tablet","platform":"test","app_version":"1.0.0","protocol_version":3,"schema":{"version":0,"hash":""},"scope_set_version":0,"known_scopes":{}}
        """
      Then the response status is 200
      And the scopes added in the response are exactly the scopes client "A" holds

    Scenario: the client keeps the server's set and never adds a scope of its own
      Given client "A" of user "alice" has connected and rebuilt every assigned scope
      When client "A" executes SQL:
        """
        INSERT INTO tasks (id, owner_id, title) VALUES ('t-1', 'bob', 'written for someone else');
        """
      And client "A" syncs
      Then every scope key in every connect and pull request client "A" sent was assigned to client "A" in an earlier response's "scopes.add" or "scope_updates.add"
      And client "A" reports exactly the scopes the server assigned to it

  @cap:provision @cap:scopes
  Rule: the set is the union of the default user scope, registered shared scopes, explicit grants and assignment function results

    Scenario: all four sources contribute and nothing else does
      Given a registered shared scope "catalog_public"
      And user "alice" is assigned scope "project:p1"
      And the registered assignment function returns for user "alice":
        | scope    |
        | team:t_7 |
        | team:t_8 |
      And user "bob" is assigned scope "project:p2"
      When client "A" of user "alice" connects as a fresh client
      Then the response status is 200
      And the response member "/scopes/add" lists exactly these scopes, each with cursor null:
        | scope          |
        | catalog_public |
        | project:p1     |
        | team:t_7       |
        | team:t_8       |
        | user:alice     |
      And the response member "/scopes/remove" equals []

    Scenario: a revoked default scope leaves the other sources in place
      Given a registered shared scope "catalog_public"
      And the default scope of user "alice" is revoked
      When client "A" of user "alice" connects as a fresh client
      Then the response member "/scopes/add" lists exactly these scopes, each with cursor null:
        | scope          |
        | catalog_public |

    Scenario: a scope contributed by two sources appears once
      Given a registered shared scope "catalog_public"
      And user "alice" is assigned scope "catalog_public"
      When client "A" of user "alice" connects as a fresh client
      Then the response member "/scopes/add" lists exactly these scopes, each with cursor null:
        | scope          |
        | catalog_public |
        | user:alice     |

  @cap:provision @cap:scopes
  Rule: a client-authored scope instance or replication predicate is rejected

    @negative
    Scenario Outline: a pull naming a scope the server never assigned is refused whole
      Given client "A" of user "alice" has connected and rebuilt every assigned scope
      And user "bob" is assigned scope "project:p2"
      When client "A" sends its next pull request with "/scopes/<scope>" set to {"cursor":null}
      Then the response status is 400 with error code "invalid_request"
      And the response has no member "/changes"
      And no scope cursor of client "A" advanced

      Examples:
        | scope          | why                                   |
        | user:bob       | another user's default scope          |
        | project:p2     | granted to another user only          |
        | project:p9     | exists nowhere                        |
        | team:*         | a wildcard instance                   |

    @negative
    Scenario Outline: a replication predicate or identity claim in a request is refused whole
      Given client "A" of user "alice" has connected and rebuilt every assigned scope
      When client "A" sends its next <endpoint> request with "<member>" set to <value>
      Then the response status is 400 with error code "invalid_request"
      And no durable state changed on the server

      Examples:
        | endpoint | member                  | value                                  |
        | pull     | /filter                 | {"table":"tasks","where":"owner_id = 'bob'"} |
        | pull     | /scopes/user:alice/where | "owner_id = 'bob'"                    |
        | connect  | /requested_scopes       | ["user:bob"]                           |
        | pull     | /user_id                | "bob"                                  |
        | rebuild  | /scope                  | "user:bob"                             |

    @negative
    Scenario: rows of an unassigned scope never reach the client that asked for it
      Given client "A" of user "alice" has connected and rebuilt every assigned scope
      And the harness has committed and capture has materialized:
        """
        INSERT INTO public.tasks (id, owner_id, title) VALUES ('t-b1', 'bob', 'private to bob');
        """
      When client "A" sends its next rebuild request for scope "user:bob" with "/cursor" set to null
      Then the response status is 400 with error code "invalid_request"
      And no response recorded for client "A" contains row "t-b1"
