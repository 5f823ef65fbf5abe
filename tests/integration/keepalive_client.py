#!/usr/bin/env python3
"""One kept-alive HTTP(S) connection across a reload, as Prometheus keeps its scrape connection.

keepalive_client.py URL USER:PASSWORD GATE [--cacert F] [--cert F --key F]

Sends GET URL with the credentials, prints the status, creates GATE.ready and waits for GATE.go
(written by the test after it changed the web config), then sends the same request on the same
connection and prints its status and whether the connection was the same one ("same"), or
"closed" when the server closed it instead of answering."""
import argparse
import base64
import http.client
import os
import ssl
import sys
import time
import urllib.parse

p = argparse.ArgumentParser()
p.add_argument("url")
p.add_argument("credentials")
p.add_argument("gate")
p.add_argument("--cacert")
p.add_argument("--cert")
p.add_argument("--key")
a = p.parse_args()
u = urllib.parse.urlsplit(a.url)
if u.scheme == "https":
    ctx = ssl.create_default_context(cafile=a.cacert)
    # Python 3.13 (Debian 13) verifies strictly by default (a CA certificate must name its key
    # usage); Prometheus's Go client does not, and the test's certificates are the endpoint's test.
    ctx.verify_flags &= ~getattr(ssl, "VERIFY_X509_STRICT", 0)
    if a.cert:
        ctx.load_cert_chain(a.cert, a.key)
    conn = http.client.HTTPSConnection(u.hostname, u.port, context=ctx, timeout=5)
else:
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=5)
headers = {"Authorization": "Basic " + base64.b64encode(a.credentials.encode()).decode()}


def ask():
    conn.request("GET", u.path, headers=headers)
    where = conn.sock.getsockname()  # before the answer: a 401 closes it
    r = conn.getresponse()
    r.read()
    return r.status, where


first, where = ask()
print(first, flush=True)
open(a.gate + ".ready", "w").close()
deadline = time.time() + 60
while not os.path.exists(a.gate + ".go"):
    if time.time() > deadline:
        sys.exit("no go")
    time.sleep(0.05)
try:
    conn.auto_open = 0  # a request on a closed connection fails here instead of reconnecting
    second, again = ask()
    print(second, "same" if again == where else "new", flush=True)
except (http.client.HTTPException, OSError) as e:
    print("closed", type(e).__name__, flush=True)
