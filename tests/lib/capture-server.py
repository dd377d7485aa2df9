#!/usr/bin/env python3
"""capture-server.py PORTFILE LOGFILE: a stand-in web server for tests of
what a client sends.  It listens on 127.0.0.1 (a free port, written to
PORTFILE), appends each request's line and headers to LOGFILE (a blank
line after each), and answers GET .../_health with 200 {"status":"ok"},
anything else with 401 UNAUTHENTICATED and a cookie (Set-Cookie:
rotated=r1), as a web server that refused the credentials would."""
import http.server
import os
import sys
import threading

PORTFILE, LOGFILE = sys.argv[1], sys.argv[2]
lock = threading.Lock()


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def answer(self):
        n = int(self.headers.get("Content-Length") or 0)
        if n:
            self.rfile.read(n)
        with lock, open(LOGFILE, "a") as log:
            log.write("%s %s\n%s\n" % (self.command, self.path, self.headers))
        if self.command == "GET" and self.path.endswith("/_health"):
            status, body = 200, b'{"status":"ok"}'
            ctype = "application/json"
        else:
            status = 401
            body = (b'{"type":"about:blank","title":"Unauthorized",'
                    b'"status":401,"code":"UNAUTHENTICATED"}')
            ctype = "application/problem+json"
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        if status != 200:
            self.send_header("Set-Cookie", "rotated=r1; Path=/")
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = answer

    def log_message(self, *args):
        pass


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
with open(PORTFILE + ".tmp", "w") as f:
    f.write("%d\n" % server.server_address[1])
os.rename(PORTFILE + ".tmp", PORTFILE)
server.serve_forever()
