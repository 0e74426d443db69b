-- The writer fence on PostgreSQL (docs/behaviour/states.md#writer-fence-and-single-flight,
-- docs/DECISIONS.md "The writer fence as a lease in PostgreSQL (issue 43)"): one row a named
-- lease, shared by every process on this database whatever its data directory. The holder
-- renews expires_at while it holds the lease; an expired lease is taken over. token grows by one
-- at every acquisition and the row is never deleted, so a token is never handed out twice: every
-- transaction a walk commits reads the row FOR SHARE with its own token, and a walk whose lease
-- passed to another commits nothing more (the fencing token). All times are the database's now().
CREATE TABLE engine_leases (
  name         text PRIMARY KEY,
  token        bigint NOT NULL,
  holder       text NOT NULL,
  -- The holder's pid, and the kernel boot and pid namespace it is a pid of: a taker in the same
  -- namespace can tell that the holder died (lib/db/lease-row.ts); null where none can be read.
  holder_pid   integer,
  holder_space text,
  acquired_at  timestamptz NOT NULL,
  renewed_at   timestamptz NOT NULL,
  expires_at   timestamptz NOT NULL
);
