-- The inbox: one row per unique event per endpoint, plus the per-resource sequence gate,
-- the handler jobs of each row and the history of their attempts. Times are RFC 3339 UTC
-- text with milliseconds ("2026-11-29T16:05:34.123Z"): fixed width, so they sort and compare
-- as text, and an operator reading the table with sqlite3 sees real dates.

CREATE TABLE inbox (
  id                INTEGER PRIMARY KEY,
  endpoint          TEXT    NOT NULL,
  event_id          TEXT    NOT NULL,
  id_source         TEXT    NOT NULL,   -- "header:X-GitHub-Delivery", "body:/id" or "sha256"
  event_type        TEXT    NOT NULL DEFAULT '',
  resource_id       TEXT    NOT NULL DEFAULT '',
  sequence          TEXT    NOT NULL DEFAULT '',  -- as delivered
  sequence_key      INTEGER,            -- integer, or an RFC 3339 instant in microseconds
  body_sha256       TEXT    NOT NULL,
  headers           TEXT    NOT NULL,   -- JSON object; credential headers left out
  body              BLOB    NOT NULL,
  status            TEXT    NOT NULL CHECK (status IN
                      ('pending', 'processing', 'processed', 'stale', 'dead', 'ignored')),
  received_at       TEXT    NOT NULL,
  processed_at      TEXT,
  duplicates        INTEGER NOT NULL DEFAULT 0,
  last_duplicate_at TEXT,
  UNIQUE (endpoint, event_id)
);
CREATE INDEX inbox_by_status ON inbox (status, received_at);
CREATE INDEX inbox_by_received ON inbox (received_at);

CREATE TABLE sequences (
  endpoint      TEXT    NOT NULL,
  resource_id   TEXT    NOT NULL,
  last_sequence INTEGER NOT NULL,
  last_event_id TEXT    NOT NULL,
  updated_at    TEXT    NOT NULL,
  PRIMARY KEY (endpoint, resource_id)
) WITHOUT ROWID;

CREATE TABLE jobs (
  id              INTEGER PRIMARY KEY,
  inbox_id        INTEGER NOT NULL REFERENCES inbox (id) ON DELETE CASCADE,
  handler         TEXT    NOT NULL,
  status          TEXT    NOT NULL CHECK (status IN ('pending', 'processing', 'done', 'dead')),
  attempts        INTEGER NOT NULL DEFAULT 0,
  next_attempt_at TEXT    NOT NULL,
  lease_owner     TEXT,
  lease_token     TEXT,
  lease_until     TEXT,
  last_error      TEXT,
  UNIQUE (inbox_id, handler)
);
CREATE INDEX jobs_due ON jobs (status, next_attempt_at);

CREATE TABLE attempts (
  id          INTEGER PRIMARY KEY,
  job         INTEGER NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
  number      INTEGER NOT NULL,
  started_at  TEXT    NOT NULL,
  finished_at TEXT,
  outcome     TEXT CHECK (outcome IN ('ok', 'failed', 'timeout', 'permanent')),
  detail      TEXT    NOT NULL DEFAULT ''
);
CREATE INDEX attempts_by_job ON attempts (job);
