"""A stand-in OTLP/HTTP trace collector for the traced hookbox row (servers.py,
HookboxTraced): it takes POST /v1/traces, counts the spans of each JSON body and answers
200 `{}`, as a collector that keeps up would. Run as a process of its own, so its CPU is not
the harness's: `python3 collector.py PORT COUNT_FILE`; on SIGTERM it writes the span count
to COUNT_FILE. Standard library only. (The tests decode the same bodies with the
OpenTelemetry project's definitions: tests/interop/otlp_receiver.mjs.)"""
import json
import signal
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

spans = 0


class Sink(BaseHTTPRequestHandler):
    def do_POST(self):  # noqa: N802 (http.server's name)
        global spans
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        for rs in json.loads(body).get("resourceSpans", []):
            for ss in rs.get("scopeSpans", []):
                spans += len(ss.get("spans", []))
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, *args):
        pass


def main():
    port, count_file = int(sys.argv[1]), sys.argv[2]
    server = ThreadingHTTPServer(("127.0.0.1", port), Sink)

    def stop(*_):
        with open(count_file, "w") as f:
            f.write(str(spans))
        sys.exit(0)

    signal.signal(signal.SIGTERM, stop)
    server.serve_forever()


if __name__ == "__main__":
    main()
