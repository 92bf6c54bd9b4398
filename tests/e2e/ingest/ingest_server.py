#!/usr/bin/env python3
"""A loopback stand-in for Grafana Pyroscope's ingest API, for the e2e tests
(tests/e2e/test_windows.c): it takes POST /ingest?name=...&from=...&until=...
&format=pprof, keeps each body as a file and writes one line per request to
a log, in a shape a C test reads with sscanf:

    REQ <n> <from> <until> <format> <spyName> <body file> <name, url-decoded>

It checks nothing itself: the test decodes the bodies with go tool pprof.
With --otlp it stands in for an OpenTelemetry Collector's OTLP/HTTP receiver
(POST /v1development/profiles, tests/e2e/test_windows_otlp.c): each body is
kept as body-NNNN.pb (an ExportProfilesServiceRequest, decoded by the test
with protoc --decode), the request's Content-Type is logged in place of the
format and its Content-Encoding in place of the spyName (a gzip'd body is
kept uncompressed), and a success is 200 with an empty
ExportProfilesServiceResponse.
Modes (--mode): ok (204 No Content, as Pyroscope answers), 500, partial
(with --otlp: 200 and a partial_success that rejected 2 profiles), slow (waits
--delay seconds, then 200), close (reads the request, closes the connection
without an answer). It listens on 127.0.0.1 only, writes its port to
--port-file, and stops by itself after --lifetime seconds."""
import argparse
import gzip
import os
import socket
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", required=True)
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--mode", default="ok", choices=["ok", "500", "partial", "slow", "close"])
    ap.add_argument("--delay", type=float, default=3.0)
    ap.add_argument("--lifetime", type=float, default=120.0)
    ap.add_argument("--otlp", action="store_true")
    a = ap.parse_args()
    os.makedirs(a.dir, exist_ok=True)
    log = open(os.path.join(a.dir, "requests.log"), "a", buffering=1)
    lock = threading.Lock()
    count = [0]

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_POST(self):
            u = urllib.parse.urlsplit(self.path)
            q = urllib.parse.parse_qs(u.query)
            n = int(self.headers.get("Content-Length", "0"))
            body = self.rfile.read(n)
            encoding = self.headers.get("Content-Encoding", "-")
            if a.otlp and encoding == "gzip":
                body = gzip.decompress(body)
            with lock:
                count[0] += 1
                k = count[0]
            path = os.path.join(a.dir, ("body-%04d.pb" if a.otlp else "body-%04d.pb.gz") % k)
            with open(path, "wb") as f:
                f.write(body)
            auth = self.headers.get("Authorization", "-").replace(" ", "_")
            fmt = self.headers.get("Content-Type", "-") if a.otlp else q.get("format", ["-"])[0]
            spy = encoding if a.otlp else q.get("spyName", ["-"])[0]
            log.write("REQ %d %s %s %s %s %s %s %s %s\n" % (
                k, q.get("from", ["0"])[0], q.get("until", ["0"])[0], fmt,
                spy, u.path, auth, path, q.get("name", ["-"])[0]))
            if a.mode == "close":
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)
                return
            if a.mode == "slow":
                time.sleep(a.delay)
            code = 500 if a.mode == "500" else 204 if a.mode == "ok" and not a.otlp else 200
            # an ExportProfilesServiceResponse: empty (all accepted), or with a
            # partial_success {rejected_profiles: 2, error_message: "too old"}
            answer = b"\x0a\x0b\x08\x02\x12\x07too old" if a.mode == "partial" else b""
            self.send_response(code)
            if a.otlp and code == 200:
                self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    tmp = a.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write("%d\n" % srv.server_address[1])
    os.rename(tmp, a.port_file)
    threading.Timer(a.lifetime, srv.shutdown).start()
    srv.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())
