-- The inbox on PostgreSQL: the same tables, columns and meanings as schema/sqlite/ (after its
-- 0003), in PostgreSQL's own types: times are timestamptz (hookbox reads them back as the
-- same RFC 3339 UTC text with milliseconds), the body is bytea (any bytes, as delivered),
-- headers are json (kept as written), jobs.sync is a boolean.
--
-- Applied by `hookbox migrate` / `serve` in one transaction under an advisory lock, so
-- replicas starting at once apply it once.

CREATE TABLE inbox (
  id                bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  endpoint          text        NOT NULL,
  event_id          text        NOT NULL,
  id_source         text        NOT NULL,   -- "header:X-GitHub-Delivery", "body:/id" or "sha256"
  event_type        text        NOT NULL DEFAULT '',
  resource_id       text        NOT NULL DEFAULT '',
  sequence          text        NOT NULL DEFAULT '',  -- as delivered
  sequence_key      bigint,                 -- integer, or an RFC 3339 instant in microseconds
  body_sha256       text        NOT NULL,
  headers           json        NOT NULL,   -- credential headers left out
  body              bytea       NOT NULL,
  status            text        NOT NULL CHECK (status IN
                      ('pending', 'processing', 'processed', 'stale', 'dead', 'ignored')),
  received_at       timestamptz NOT NULL,
  processed_at      timestamptz,
  duplicates        bigint      NOT NULL DEFAULT 0,
  last_duplicate_at timestamptz,
  UNIQUE (endpoint, event_id)
);
CREATE INDEX inbox_by_status ON inbox (status, received_at);
CREATE INDEX inbox_by_received ON inbox (received_at);
-- Job claiming walks the unfinished jobs of one resource in received order.
CREATE INDEX inbox_by_resource ON inbox (endpoint, resource_id, id);

CREATE TABLE sequences (
  endpoint      text        NOT NULL,
  resource_id   text        NOT NULL,
  last_sequence bigint      NOT NULL,
  last_event_id text        NOT NULL,
  updated_at    timestamptz NOT NULL,
  PRIMARY KEY (endpoint, resource_id)
);
-- The daily purge finds old sequence-gate rows by their last update.
CREATE INDEX sequences_by_updated ON sequences (updated_at);

CREATE TABLE jobs (
  id              bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  inbox_id        bigint      NOT NULL REFERENCES inbox (id) ON DELETE CASCADE,
  handler         text        NOT NULL,
  status          text        NOT NULL CHECK (status IN ('pending', 'processing', 'done', 'dead')),
  attempts        integer     NOT NULL DEFAULT 0,
  next_attempt_at timestamptz NOT NULL,
  lease_owner     text,
  lease_token     text,
  lease_until     timestamptz,
  last_error      text,
  -- mode: sync jobs run inside the producer's request, never in the worker pool.
  sync            boolean     NOT NULL DEFAULT false,
  UNIQUE (inbox_id, handler)
);
CREATE INDEX jobs_due ON jobs (status, next_attempt_at);
CREATE INDEX jobs_unfinished ON jobs (status, inbox_id) WHERE status IN ('pending', 'processing');

CREATE TABLE attempts (
  id          bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  job         bigint      NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
  number      integer     NOT NULL,
  started_at  timestamptz NOT NULL,
  finished_at timestamptz,
  outcome     text CHECK (outcome IN ('ok', 'failed', 'timeout', 'permanent')),
  detail      text        NOT NULL DEFAULT ''
);
CREATE INDEX attempts_by_job ON attempts (job);
