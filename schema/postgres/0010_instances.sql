-- Lease liveness: the same table as schema/sqlite/0010, in PostgreSQL's types. One row per
-- running hookbox process that takes leases (an instance), on any replica. Its id, random,
-- starts the names of its lease owners ("<id>:dispatcher", "<id>:request:..."); the process
-- renews heartbeat_at and expires_at every few seconds, and once expires_at has passed any
-- replica may end the leases of its jobs. host and pid are for the operator's eyes only:
-- nothing compares them (two containers may share both).
CREATE TABLE instances (
  id           text        PRIMARY KEY,
  host         text        NOT NULL,
  pid          bigint      NOT NULL,
  started_at   timestamptz NOT NULL,
  heartbeat_at timestamptz NOT NULL,
  expires_at   timestamptz NOT NULL
);
