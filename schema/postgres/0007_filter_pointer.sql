-- The filter's `--where POINTER=VALUE` (src/inbox/backend.h, FilterCondition): the member of
-- the body at a JSON pointer (RFC 6901), as text, exactly as SQLite's hookbox_pointer
-- (src/inbox/filter.h, JsonPointerValue) answers for the same body:
-- - a string member's value, unescaped; a number's JSON text as written (the json type,
--   not jsonb, keeps it: 1.50 stays 1.50, 1e2 stays 1e2); true or false;
-- - NULL for null, an object, an array, a missing member, and a body that is not one valid
--   JSON document in UTF-8. Such a body is never an error: the cast's error is caught here.
-- An array is indexed only by a decimal token without leading zeros (json's own `->` would
-- take -1 as the last element); of duplicate object members the last one counts (json's `->`).
--
-- Not PARALLEL SAFE: the EXCEPTION block is a subtransaction, which a parallel worker cannot
-- start. COST 1000 tells the planner to test every cheaper condition of a filter first.
CREATE FUNCTION hookbox_pointer(body bytea, pointer text) RETURNS text
LANGUAGE plpgsql IMMUTABLE STRICT COST 1000 AS $$
DECLARE
  doc json;
  token text;
  tokens text[];
BEGIN
  IF left(pointer, 1) <> '/' OR pointer ~ '~([^01]|$)' THEN
    RETURN NULL;
  END IF;
  -- string_to_array('', '/') is the empty array, but the pointer '/' names the member "".
  tokens := CASE WHEN pointer = '/' THEN ARRAY[''] ELSE string_to_array(substr(pointer, 2), '/') END;
  -- Any error of the body's (not UTF-8, not JSON, an escape text cannot hold) is no match.
  BEGIN
    -- json's operators cannot turn \u0000 into text, even on the way to another member:
    -- read as \uFFFD, as the SQLite twin reads it.
    doc := replace(convert_from(body, 'UTF8'), '\u0000', '\uFFFD')::json;
    FOREACH token IN ARRAY tokens LOOP
      token := replace(replace(token, '~1', '/'), '~0', '~');
      CASE json_typeof(doc)
        WHEN 'object' THEN
          doc := doc -> token;
        WHEN 'array' THEN
          IF token !~ '^(0|[1-9][0-9]{0,8})$' THEN
            RETURN NULL;
          END IF;
          doc := doc -> token::int;
        ELSE
          RETURN NULL;
      END CASE;
      IF doc IS NULL THEN
        RETURN NULL;
      END IF;
    END LOOP;
    IF json_typeof(doc) IN ('string', 'number', 'boolean') THEN
      RETURN doc #>> '{}';
    END IF;
    RETURN NULL;
  EXCEPTION WHEN OTHERS THEN
    RETURN NULL;
  END;
END
$$;
