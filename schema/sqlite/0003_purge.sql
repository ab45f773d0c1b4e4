-- The daily purge finds old sequence-gate rows by their last update.
CREATE INDEX sequences_by_updated ON sequences (updated_at);
