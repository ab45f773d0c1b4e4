-- Handler state: one row per (endpoint, handler) that an operator paused, whose
-- circuit breaker counted a failure, or that has a rate limit. A handler without a row is
-- running, its circuit closed, its bucket full. The claim reads it in its own transaction
-- (DESIGN.md, "Handler state"), so a pause holds from the next claim on.
CREATE TABLE handler_state (
  endpoint      TEXT    NOT NULL,
  handler       TEXT    NOT NULL,
  paused        INTEGER NOT NULL DEFAULT 0,
  paused_reason TEXT    NOT NULL DEFAULT '',
  paused_at     TEXT,
  circuit       TEXT    NOT NULL DEFAULT 'closed'
                  CHECK (circuit IN ('closed', 'open', 'half-open')),
  failures      INTEGER NOT NULL DEFAULT 0,   -- consecutive failed attempts
  open_until    TEXT,                         -- open: no claim before this
  probe_until   TEXT,                         -- half-open: a probe holds a lease until this
  tokens        REAL,                         -- rate limit's bucket; NULL = full
  refilled_at   TEXT,
  PRIMARY KEY (endpoint, handler)
) WITHOUT ROWID;
