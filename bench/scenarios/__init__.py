"""bench/run.py's scenarios, one module each (table, replicas, handlers, scale, console), each
with run(args): it measures, then writes its section with harness.report.emit."""
