-- Scope-local compaction to the durable high-watermark (004 sheet,
-- "Scope-local compaction", step 2): a scope that no nonexpired client is
-- assigned to is compacted up to its high-watermark, the position of the last
-- effect it ever had in the current stream generation. The high-watermark is
-- kept in a table of its own, raised in the transaction that materializes the
-- effects, so it survives the deletion of every effect below it: the floor is
-- never inferred from what is left in the log. synchro_compact_scope (009)
-- reads it.

CREATE TABLE synchro.scope_high_watermarks (
  scope_id text NOT NULL,
  stream_generation text NOT NULL,
  commit_lsn pg_lsn NOT NULL,
  event_ordinal bigint NOT NULL CHECK (event_ordinal >= 0),
  effect_ordinal integer NOT NULL CHECK (effect_ordinal >= 0),
  PRIMARY KEY (scope_id, stream_generation)
);

-- One statement of materialized effects raises each touched scope's mark once (never lowers it).
CREATE FUNCTION synchro.scope_high_watermark_raise() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, synchro AS $$
BEGIN
  INSERT INTO synchro.scope_high_watermarks (scope_id, stream_generation, commit_lsn, event_ordinal, effect_ordinal)
  SELECT DISTINCT ON (scope_id, stream_generation) scope_id, stream_generation, commit_lsn, event_ordinal, effect_ordinal
    FROM new_effects
   ORDER BY scope_id, stream_generation, commit_lsn DESC, event_ordinal DESC, effect_ordinal DESC
  ON CONFLICT (scope_id, stream_generation) DO UPDATE
    SET commit_lsn = excluded.commit_lsn, event_ordinal = excluded.event_ordinal, effect_ordinal = excluded.effect_ordinal
  WHERE (synchro.scope_high_watermarks.commit_lsn, synchro.scope_high_watermarks.event_ordinal, synchro.scope_high_watermarks.effect_ordinal)
      < (excluded.commit_lsn, excluded.event_ordinal, excluded.effect_ordinal);
  RETURN NULL;
END
$$;

CREATE TRIGGER scope_effects_high_watermark AFTER INSERT ON synchro.scope_effects
  REFERENCING NEW TABLE AS new_effects FOR EACH STATEMENT EXECUTE FUNCTION synchro.scope_high_watermark_raise();

REVOKE EXECUTE ON FUNCTION synchro.scope_high_watermark_raise() FROM PUBLIC;
