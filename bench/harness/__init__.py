"""The benchmark's shared parts, used by bench/run.py's scenarios (bench/scenarios/) and by
the standalone bench/rate.py, bench/search.py, bench/bulk.py and bench/accept_cost.py: the
machine and its processes (host), the servers under test and hookbox with any config
(servers, postgres, cgroups), the load wrk sends and its figures (wrk), signed deliveries
(signing), the pre-filled inboxes (prefill) and the report (report). Standard library only:
it runs on a fresh Debian 12."""
