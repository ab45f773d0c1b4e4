-- The console's list filtered by endpoint, newest first: a walk down this index, stopped
-- after one page, however large the inbox and however few of its rows the endpoint has.
CREATE INDEX inbox_by_endpoint ON inbox (endpoint, received_at);
