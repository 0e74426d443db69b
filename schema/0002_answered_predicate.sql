-- The answered predicate of docs/behaviour/stages.md#blank-form-gate, in one place: an answer
-- counts when it holds at least one non-whitespace character. Whitespace is the set JavaScript's
-- \s matches, spelled out so that the walk's blank-form gate and this function agree on every
-- character.
CREATE FUNCTION q_a_is_answered(answer_text text) RETURNS boolean
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  AS $$ SELECT answer_text IS NOT NULL AND answer_text ~ '[^\t\n\v\f\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]' $$;

-- Q&A rows that may be promoted to curated records: answered ones only.
CREATE FUNCTION promotion_candidates() RETURNS SETOF q_a_extractions
  LANGUAGE sql STABLE
  AS $$ SELECT * FROM q_a_extractions WHERE q_a_is_answered(answer_text) $$;

-- Rows for blank answers minted before the gate existed.
DELETE FROM q_a_extractions WHERE NOT q_a_is_answered(answer_text);
