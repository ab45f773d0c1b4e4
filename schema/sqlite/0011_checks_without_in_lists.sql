-- The status checks as comparisons joined by OR instead of IN lists. For an IN list of more
-- than two constants SQLite builds a temporary b-tree of the list each time a statement
-- checks it: every accept (its inbox row and its jobs) paid for two such trees, about a
-- tenth of its instructions (bench/RESULTS.md, instructions per accept). The checks allow
-- exactly the values they allowed before.
--
-- Only the text of the tables' definitions changes, not the file's format or any row, and
-- every stored row meets the new checks as it met the old: SQLite's documented way to change
-- a CHECK constraint in place (lang_altertable.html, "making other kinds of table schema
-- changes"). The migration runner then moves the schema version on (sqlite_inbox.cc,
-- Migrate), so that every connection reads the new definitions.
PRAGMA writable_schema = ON;
UPDATE sqlite_schema SET sql = replace(sql,
  'status IN
                      (''pending'', ''processing'', ''processed'', ''stale'', ''dead'', ''ignored'')',
  'status = ''pending'' OR status = ''processing'' OR status = ''processed''
                      OR status = ''stale'' OR status = ''dead'' OR status = ''ignored''')
  WHERE type = 'table' AND name = 'inbox';
UPDATE sqlite_schema SET sql = replace(sql,
  'status IN (''pending'', ''processing'', ''done'', ''dead'')',
  'status = ''pending'' OR status = ''processing'' OR status = ''done'' OR status = ''dead''')
  WHERE type = 'table' AND name = 'jobs';
UPDATE sqlite_schema SET sql = replace(sql,
  'outcome IN (''ok'', ''failed'', ''timeout'', ''permanent'')',
  'outcome = ''ok'' OR outcome = ''failed'' OR outcome = ''timeout'' OR outcome = ''permanent''')
  WHERE type = 'table' AND name = 'attempts';
UPDATE sqlite_schema SET sql = replace(sql,
  'circuit IN (''closed'', ''open'', ''half-open'')',
  'circuit = ''closed'' OR circuit = ''open'' OR circuit = ''half-open''')
  WHERE type = 'table' AND name = 'handler_state';
PRAGMA writable_schema = OFF;
