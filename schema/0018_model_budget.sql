-- The model clients' shared budget (lib/llm/budget.ts, docs/DECISIONS.md "Provider limits shared
-- across processes (issue 43)"): rate-limiter-flexible's PostgreSQL store, one row per key
-- (requests, tokens or a pause, per provider, model and slice). The library is told the table
-- exists (tableCreated) and so runs no DDL; these are exactly the columns its statements use
-- (INSERT ... VALUES (key, points, expire) ON CONFLICT (key), SELECT points, expire WHERE key,
-- DELETE WHERE expire < $1), the primary key being the one index it needs.
CREATE TABLE model_budget (
  key varchar(255) PRIMARY KEY,
  points integer NOT NULL DEFAULT 0,
  expire bigint
);
