-- inbox_by_resource holds only the rows that have a resource. The claim's walk of a
-- resource's unfinished jobs (inbox/sql_claim.cc, HeadsItsResource) is its only reader and
-- asks for a resource that is not empty, and most endpoints name none: their every accept
-- wrote an entry no query reads, one more b-tree insert and one more page in the commit's
-- WAL frames (bench/RESULTS.md, instructions per accept).
DROP INDEX inbox_by_resource;
CREATE INDEX inbox_by_resource ON inbox (endpoint, resource_id, id) WHERE resource_id <> '';
