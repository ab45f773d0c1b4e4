-- Job claiming walks the unfinished jobs of one resource in received order; these indexes
-- keep that walk short however large the inbox grows.
CREATE INDEX inbox_by_resource ON inbox (endpoint, resource_id, id);
CREATE INDEX jobs_unfinished ON jobs (status, inbox_id) WHERE status IN ('pending', 'processing');

-- Jobs of `mode: sync` endpoints run inside the producer's request, never in the worker
-- pool: a failed one waits for the producer's retry to take it over.
ALTER TABLE jobs ADD COLUMN sync INTEGER NOT NULL DEFAULT 0;
