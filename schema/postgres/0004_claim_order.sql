-- Job claiming walks the due jobs of one status in (next_attempt_at, id) order and stops
-- after the few it takes: with id in the index the walk needs no sort, whatever the backlog.
DROP INDEX jobs_due;
CREATE INDEX jobs_due ON jobs (status, next_attempt_at, id);
