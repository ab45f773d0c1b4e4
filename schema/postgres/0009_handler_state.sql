-- Handler state: the same table as schema/sqlite/0009, in PostgreSQL's types.
-- One row per (endpoint, handler) that an operator paused, whose circuit breaker counted a
-- failure, or that has a rate limit. The claim transaction reads it (and locks the rows of
-- rate-limited handlers and of a circuit's probe, FOR UPDATE), so every replica honours a
-- pause from its next claim, and replicas share one token bucket.
CREATE TABLE handler_state (
  endpoint      text             NOT NULL,
  handler       text             NOT NULL,
  paused        boolean          NOT NULL DEFAULT false,
  paused_reason text             NOT NULL DEFAULT '',
  paused_at     timestamptz,
  circuit       text             NOT NULL DEFAULT 'closed'
                  CHECK (circuit IN ('closed', 'open', 'half-open')),
  failures      integer          NOT NULL DEFAULT 0,
  open_until    timestamptz,
  probe_until   timestamptz,
  tokens        double precision,
  refilled_at   timestamptz,
  PRIMARY KEY (endpoint, handler)
);
