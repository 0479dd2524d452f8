-- Controlled reconfiguration of a registered table after its columns changed.
-- An unmanaged ALTER TABLE changes nothing clients see: the registry keeps
-- the registered fields and the manifest stays as it was. Calling
-- synchro_reconfigure_table re-reads the relation's columns, keeps the
-- logical ID of every column still present, gives each new column a fresh,
-- never reused field ID, drops the fields whose column is gone, and activates
-- a new registry generation. The server then publishes the next manifest and
-- classifies the step (an added nullable field without values is Class 2, an
-- added field with values Class 3, a removed or changed field Class 4).

-- Writes the validated field list of one registered relation as a new registry generation.
CREATE FUNCTION synchro.registry_reconfigure(p_oid oid, p_fields jsonb) RETURNS text
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, synchro AS $$
DECLARE
  v_gen bigint;
  v_table text;
  v_field jsonb;
BEGIN
  SELECT n.table_id, n.generation INTO v_table, v_gen FROM synchro.registry_next_generation(p_oid) n;
  UPDATE synchro.relations SET registry_generation = v_gen WHERE table_id = v_table;
  DELETE FROM synchro.fields f WHERE f.table_id = v_table
    AND NOT EXISTS (SELECT 1 FROM jsonb_array_elements(p_fields) n WHERE n ->> 'column' = f.column_name);
  FOR v_field IN SELECT * FROM jsonb_array_elements(p_fields) LOOP
    IF EXISTS (SELECT 1 FROM synchro.fields WHERE table_id = v_table AND column_name = v_field ->> 'column') THEN
      UPDATE synchro.fields SET portable_type = v_field ->> 'type', nullable = (v_field ->> 'nullable')::boolean,
          writable = (v_field ->> 'writable')::boolean, generated = (v_field ->> 'generated')::boolean,
          numeric_precision = (v_field ->> 'precision')::int, numeric_scale = (v_field ->> 'scale')::int
        WHERE table_id = v_table AND column_name = v_field ->> 'column';
    ELSE
      -- A new field ID from the sequence: never derived from the name, never reused.
      INSERT INTO synchro.fields VALUES (v_table, v_table || 'n' || nextval('synchro.logical_id_seq'), v_field ->> 'column',
        v_field ->> 'type', (v_field ->> 'nullable')::boolean, (v_field ->> 'writable')::boolean, (v_field ->> 'generated')::boolean,
        (v_field ->> 'precision')::int, (v_field ->> 'scale')::int);
    END IF;
  END LOOP;
  RETURN v_table;
END
$$;

CREATE FUNCTION synchro.synchro_reconfigure_table(p_relation text) RETURNS text
LANGUAGE plpgsql SET search_path = pg_catalog, synchro AS $$
DECLARE
  v_oid oid := to_regclass(p_relation);
  v_rel record;
  v_att record;
  v_type text;
  v_fields jsonb := '[]'::jsonb;
BEGIN
  IF v_oid IS NULL THEN
    RAISE EXCEPTION 'relation % does not exist', p_relation USING ERRCODE = '42P01';
  END IF;
  SELECT * INTO v_rel FROM synchro.relations WHERE physical_relation_oid = v_oid AND active AND kind = 'synced';
  IF NOT FOUND THEN
    RAISE EXCEPTION 'relation % is not registered', p_relation USING ERRCODE = '42704';
  END IF;
  -- Writers wait while the new field list is read and activated.
  EXECUTE format('LOCK TABLE %s IN SHARE MODE', v_oid::regclass);
  FOR v_att IN
    SELECT a.attname, a.atttypid, a.attnotnull, a.attidentity, a.attgenerated, a.atttypmod
      FROM pg_attribute a WHERE a.attrelid = v_oid AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum
  LOOP
    v_type := synchro.portable_type_of(v_att.atttypid);
    IF v_type IS NULL OR (v_type = 'decimal' AND v_att.atttypmod < 0) THEN
      PERFORM synchro.registration_error('unsupported_field_type', v_att.attname);
    END IF;
    v_fields := v_fields || jsonb_build_object(
      'column', v_att.attname, 'type', v_type, 'nullable', NOT v_att.attnotnull,
      'generated', v_att.attidentity = 'a' OR v_att.attgenerated <> '',
      'writable', v_rel.push_policy = 'enabled'
                  AND v_att.attname NOT IN (v_rel.pk_column, coalesce(v_rel.updated_at_column, ''), coalesce(v_rel.deleted_at_column, ''))
                  AND v_att.attidentity <> 'a' AND v_att.attgenerated = '',
      'precision', CASE WHEN v_type = 'decimal' THEN ((v_att.atttypmod - 4) >> 16) & 65535 END,
      'scale', CASE WHEN v_type = 'decimal' THEN (v_att.atttypmod - 4) & 65535 END);
  END LOOP;
  -- The key and lifecycle columns are part of the table's identity: they must still be there.
  FOR v_att IN SELECT unnest(ARRAY[v_rel.pk_column, v_rel.updated_at_column, v_rel.deleted_at_column]) AS c LOOP
    IF v_att.c IS NOT NULL AND NOT EXISTS (SELECT 1 FROM jsonb_array_elements(v_fields) f WHERE f ->> 'column' = v_att.c) THEN
      PERFORM synchro.registration_error('invalid_lifecycle_field', v_att.c);
    END IF;
  END LOOP;
  RETURN synchro.registry_reconfigure(v_oid, v_fields);
END
$$;

REVOKE EXECUTE ON FUNCTION synchro.registry_reconfigure(oid, jsonb) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION synchro.synchro_reconfigure_table(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION synchro.registry_reconfigure(oid, jsonb) TO synchro_operator;
GRANT EXECUTE ON FUNCTION synchro.synchro_reconfigure_table(text) TO synchro_operator;
