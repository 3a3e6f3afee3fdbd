#!/usr/bin/env python3
"""A static file server for the data-lake tests (tests/lake.rs).

Serves DIR on 127.0.0.1 (port 0: any free one) and prints "PORT <n>" once
it listens. Faults, for the retry and failure tests:
  --fail-first N   answer 503 to the first N requests, then serve normally
  --exit-after K   after K successful GETs of batch files (.xdr.*), exit at
                   once without answering, as a killed server would
"""
import argparse
import http.server
import os
import sys
import threading

parser = argparse.ArgumentParser()
parser.add_argument("dir")
parser.add_argument("--port", type=int, default=0)
parser.add_argument("--fail-first", type=int, default=0)
parser.add_argument("--exit-after", type=int, default=-1)
args = parser.parse_args()

lock = threading.Lock()
state = {"requests": 0, "served": 0}


class Handler(http.server.SimpleHTTPRequestHandler):
    def __init__(self, *a, **kw):
        super().__init__(*a, directory=args.dir, **kw)

    def log_message(self, fmt, *a):
        pass

    def fault(self):
        with lock:
            state["requests"] += 1
            if state["requests"] <= args.fail_first:
                return 503
            if args.exit_after >= 0 and ".xdr." in self.path and self.command == "GET":
                if state["served"] >= args.exit_after:
                    os._exit(0)
                state["served"] += 1
        return None

    def do_GET(self):
        code = self.fault()
        if code:
            self.send_error(code, "injected fault")
            return
        super().do_GET()

    def do_HEAD(self):
        code = self.fault()
        if code:
            self.send_error(code, "injected fault")
            return
        super().do_HEAD()


server = http.server.ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
print(f"PORT {server.server_address[1]}", flush=True)
server.serve_forever()
