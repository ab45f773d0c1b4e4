"""The benchmark's shared parts, used by bench/run.py's scenarios (bench/scenarios/) and by
the standalone bench/bulk.py: the machine and its processes (host), the servers under test
(servers, postgres, cgroups), the load wrk sends and its figures (wrk), the pre-filled
inboxes (prefill) and the report (report). Standard library only: it runs on a fresh
Debian 12."""
