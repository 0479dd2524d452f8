-- Portable seed export: the page-token and continuation-receipt key purposes and their first keys.
-- A seed export runs in a read-only transaction, so it cannot create a key
-- on first use the way cursors do; the key exists from installation on.
-- Its secret never signs anything else (cursors and rebuild tokens keep
-- their own purposes).

ALTER TABLE synchro.token_keys DROP CONSTRAINT token_keys_purpose_check;
ALTER TABLE synchro.token_keys ADD CONSTRAINT token_keys_purpose_check
  CHECK (purpose IN ('incremental_cursor', 'rebuild_cursor', 'seed_page', 'seed_continuation'));

-- 64 octets from four random UUIDs (gen_random_uuid draws from the strong random source).
INSERT INTO synchro.token_keys (key_id, purpose, secret, state)
VALUES ('seed-' || replace(gen_random_uuid()::text, '-', ''), 'seed_page',
        sha512(convert_to(gen_random_uuid()::text || gen_random_uuid()::text || gen_random_uuid()::text || gen_random_uuid()::text, 'UTF8')),
        'active'),
       ('receipt-' || replace(gen_random_uuid()::text, '-', ''), 'seed_continuation',
        sha512(convert_to(gen_random_uuid()::text || gen_random_uuid()::text || gen_random_uuid()::text || gen_random_uuid()::text, 'UTF8')),
        'active');
