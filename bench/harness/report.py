"""The report: the figures' formatting, the median round, the notes every load can earn,
the table of every round, and emit(), which prints a scenario's section, keeps its raw
figures in --out and writes it into --results between the section's markers."""
import datetime
import json
import os

from harness.host import log, machine, tool_versions


def fmt_ms(us):
    return "%.2f" % (us / 1000.0)


def median_run(runs):
    """The run with the median req/s (the whole run, so its latencies belong with it)."""
    ordered = sorted(runs, key=lambda r: r["rps"])
    return ordered[len(ordered) // 2]


def short_count(n):
    """A count of rows in words, as the scale and console text says it: 1,000,000 as "1 M",
    10,000 as "10 k"."""
    return "%d M" % (n // 1_000_000) if n >= 1_000_000 else "%d k" % (n // 1000)


def percentile(values, q):
    """The value q of the way up sorted values (0.0 for none): the latencies the harness
    timed itself (hookbox's delivery log lines, the console's GETs)."""
    n = len(values)
    return values[min(n - 1, int(n * q))] if n else 0.0


def load_notes(name, r):
    """What a round's load (wrk's figures r) says is off: answers other than 2xx, errors,
    timeouts, and wrk processes that started their timed runs apart."""
    notes = []
    if (r["non2xx"] or r["connect_errors"] or r["read_errors"] or r["write_errors"]
            or r["timeouts"]):
        notes.append("- %s: %d non-2xx, %d connect / %d read / %d write errors, "
                     "%d timeouts in one round" % (
                         name, r["non2xx"], r["connect_errors"], r["read_errors"],
                         r["write_errors"], r["timeouts"]))
    if r.get("start_skew_s", 0) > 0.02 * r["duration_s"]:
        notes.append("- %s: its wrk processes started their timed runs %.2f s apart "
                     "(of %.0f s)" % (name, r["start_skew_s"], r["duration_s"]))
    return notes


def rounds_table(what, servers, runs, rounds, cell):
    """"Every round (what):" and its table: a row per server, cell(run) per round."""
    return "Every round (%s):\n\n| server | %s |\n|---|%s\n%s\n" % (
        what, " | ".join("round %d" % i for i in range(1, rounds + 1)), "---:|" * rounds,
        "\n".join("| %s | %s |" % (s.name, " | ".join(cell(r) for r in runs[s.name]))
                  for s in servers))


def emit(args, name, text, raw):
    now = datetime.datetime.now(datetime.timezone.utc).astimezone()
    header = ("Run %s on %s.\n\nCommand: `%s` (%d s per run, %d rounds, wrk %d threads / %d "
              "connections, server threads %d). Tools: %s.\n\n" % (
                  now.strftime("%Y-%m-%d %H:%M %Z"), machine(), args.command, args.duration,
                  args.rounds, args.wrk_threads, args.connections, args.server_threads,
                  tool_versions(args)))
    print("\n" + header + text)
    stamp = now.strftime("%Y%m%d-%H%M%S")
    with open(os.path.join(args.out, "%s-%s.json" % (name, stamp)), "w") as f:
        json.dump({"header": header, "text": text, "raw": raw}, f, indent=1)
    if args.results:
        doc = ""
        if os.path.exists(args.results):
            with open(args.results) as f:
                doc = f.read()
        begin, end = "<!-- BEGIN %s -->" % name, "<!-- END %s -->" % name
        if begin in doc and end in doc:
            pre, rest = doc.split(begin, 1)
            _, post = rest.split(end, 1)
            doc = pre + begin + "\n" + header + text + end + post
        else:
            doc += "\n%s\n%s%s%s\n" % (begin, header, text, end)
        with open(args.results, "w") as f:
            f.write(doc)
        log("wrote the %s into %s" % (name, args.results))
