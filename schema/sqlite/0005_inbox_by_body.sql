-- dedupe: [id, body] looks for a stored event of the endpoint with the same body, inside
-- the accept transaction: this index keeps that lookup one probe however large the inbox.
CREATE INDEX inbox_by_body ON inbox (endpoint, body_sha256);
