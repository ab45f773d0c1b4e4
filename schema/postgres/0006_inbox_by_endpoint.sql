-- The console's list filtered by endpoint, newest first: a walk down this index, stopped
-- after one page, however large the inbox and however few of its rows the endpoint has.
-- (id too: PostgreSQL's index does not carry it, and the keyset compares (received_at, id).)
CREATE INDEX inbox_by_endpoint ON inbox (endpoint, received_at, id);
