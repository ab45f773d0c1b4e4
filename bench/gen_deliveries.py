#!/usr/bin/env python3
"""Pre-generates the benchmark's deliveries: GitHub-style `push` events (~2 KB of JSON each),
every one signed like GitHub signs (`X-Hub-Signature-256: sha256=<hex HMAC-SHA256 of the
body>`), each with its own `X-GitHub-Delivery` id; a share of them (20% by default) are
redeliveries of a recent event (same id, body and signature), as a producer retrying after a
lost answer sends them.

One line per request, tab-separated: delivery id, event name, signature header value, body.
The bodies are compact JSON, which escapes control characters, so they hold no tab or newline.
bench/deliveries.lua reads this file; every server of a run is sent the same lines.

Only the Python standard library: it runs on a fresh Debian 12.
"""
import argparse
import json
import random
import uuid

from harness.signing import signature


def push_event(rng: random.Random, n: int) -> dict:
    """A GitHub push payload, trimmed to the usual fields, about 2 KB once encoded."""
    def sha() -> str:
        return "%040x" % rng.getrandbits(160)

    before, after = sha(), sha()
    user = {"name": "Octo Cat", "email": "octocat@example.com", "username": "octocat"}
    commits = []
    for i in range(2):
        commits.append({
            "id": sha(), "tree_id": sha(), "distinct": True,
            "message": "Bench commit %d.%d: fix the frobnicator again" % (n, i),
            "timestamp": "2026-01-%02dT10:%02d:%02dZ" % (1 + n % 28, n % 60, i),
            "url": "https://github.com/octo-org/hello-world/commit/" + sha(),
            "author": user, "committer": user,
            "added": [], "removed": [], "modified": ["src/frob_%d.c" % (n % 97)],
        })
    return {
        "ref": "refs/heads/main", "before": before, "after": after,
        "repository": {
            "id": 1296269, "node_id": "MDEwOlJlcG9zaXRvcnkxMjk2MjY5",
            "name": "hello-world", "full_name": "octo-org/hello-world", "private": False,
            "owner": {"login": "octo-org", "id": 6811672, "type": "Organization"},
            "html_url": "https://github.com/octo-org/hello-world",
            "default_branch": "main", "pushed_at": 1767225600 + n,
        },
        "pusher": {"name": "octocat", "email": "octocat@example.com"},
        "sender": {"login": "octocat", "id": 583231, "type": "User",
                   "avatar_url": "https://avatars.githubusercontent.com/u/583231?v=4"},
        "created": False, "deleted": False, "forced": False,
        "compare": "https://github.com/octo-org/hello-world/compare/%s...%s" % (
            before[:12], after[:12]),
        "commits": commits,
        "head_commit": commits[-1],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--count", type=int, default=200000, help="requests to write")
    ap.add_argument("--duplicates", type=float, default=0.20, help="share of redeliveries")
    ap.add_argument("--recent", type=int, default=64,
                    help="a redelivery repeats one of this many latest distinct events")
    ap.add_argument("--secret", required=True)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()

    rng = random.Random(args.seed)
    recent = []
    distinct = sizes = 0
    with open(args.out, "w", encoding="ascii", newline="\n") as out:
        for _ in range(args.count):
            if recent and rng.random() < args.duplicates:
                line = rng.choice(recent)
            else:
                body = json.dumps(push_event(rng, distinct), separators=(",", ":"))
                sig = signature(args.secret, body.encode())
                delivery = str(uuid.UUID(int=rng.getrandbits(128), version=4))
                line = "%s\tpush\t%s\t%s\n" % (delivery, sig, body)
                distinct += 1
                sizes += len(body)
                recent.append(line)
                if len(recent) > args.recent:
                    recent.pop(0)
            out.write(line)
    print("gen_deliveries: %d requests, %d distinct events, mean body %d bytes -> %s"
          % (args.count, distinct, sizes // max(distinct, 1), args.out))


if __name__ == "__main__":
    main()
