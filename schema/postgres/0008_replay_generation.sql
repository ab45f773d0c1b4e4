-- Replay (`hookbox inbox replay`): a job that ran to done can run again as a new run of the
-- same job. `generation` counts the runs: 0 for the first, +1 for each replay. The handler
-- sees it (HandlerEvent::generation), and its idempotency key changes with it, so that the
-- downstream's own dedupe does not swallow the replay. Each attempt records the generation it
-- belonged to, so that `inbox show` can tell the runs apart in one history. (ADD COLUMN with a
-- constant default rewrites no table.)
ALTER TABLE jobs ADD COLUMN generation integer NOT NULL DEFAULT 0;
ALTER TABLE attempts ADD COLUMN generation integer NOT NULL DEFAULT 0;
