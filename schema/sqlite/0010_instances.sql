-- Lease liveness (DESIGN.md, "Lease liveness"): one row per running hookbox process that
-- takes leases (an instance). Its id, random, starts the names of its lease owners
-- ("<id>:dispatcher", "<id>:request:..."); the process renews heartbeat_at and expires_at
-- every few seconds, and once expires_at has passed any process may end the leases of its
-- jobs. host and pid are for the operator's eyes only: nothing compares them (two
-- containers may share both). A clean stop deletes its row; an expired row is deleted a day
-- later.
CREATE TABLE instances (
  id           TEXT    PRIMARY KEY,
  host         TEXT    NOT NULL,
  pid          INTEGER NOT NULL,
  started_at   TEXT    NOT NULL,
  heartbeat_at TEXT    NOT NULL,
  expires_at   TEXT    NOT NULL
) WITHOUT ROWID;
