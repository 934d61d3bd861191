"""A reverse proxy that checks every request's SigV4 signature with botocore before passing it on.

The Rust client signs with the aws-sigv4 crate; this checks with an independent signer, as AWS
Glue's and S3 Tables' Iceberg REST endpoints would: botocore rebuilds the canonical request
from what arrived on the wire (method, path, query, the headers named in SignedHeaders, the
body), signs it with the same secret at the request's x-amz-date, and the signatures must match.
The credential scope must name the expected access key, region and service, and the signed
headers must be exactly those botocore's SigV4Auth would sign.

    python sigv4_proxy.py --port P --upstream U --service glue --region us-east-1 \
        --access-key AK --secret-key SK [--session-token T]

A refused request gets 403 and is not forwarded. GET /__sigv4 returns
{"verified": n, "refused": [reasons]} (not signed, not forwarded).
"""

import argparse
import datetime
import http.client
import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qsl, urlsplit

from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

AUTH_RE = re.compile(
    r"^AWS4-HMAC-SHA256 Credential=(?P<cred>[^,]+), ?SignedHeaders=(?P<signed>[^,]+), ?Signature=(?P<sig>[0-9a-f]+)$"
)
HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "upgrade", "host", "content-length"}

stats = {"verified": 0, "refused": []}
lock = threading.Lock()


def verify(args, method, raw_path, headers, body):
    """Returns None when the signature holds, else why not."""
    auth = headers.get("authorization")
    if not auth:
        return "no Authorization header"
    m = AUTH_RE.match(auth)
    if not m:
        return f"malformed Authorization: {auth[:60]}"
    cred = m.group("cred").split("/")
    if len(cred) != 5:
        return f"malformed credential scope {m.group('cred')}"
    access_key, date, region, service, terminator = cred
    if access_key != args.access_key:
        return f"signed with access key {access_key}, expected {args.access_key}"
    if (region, service, terminator) != (args.region, args.service, "aws4_request"):
        return f"scope {region}/{service}/{terminator}, expected {args.region}/{args.service}/aws4_request"
    stamp = headers.get("x-amz-date")
    if not stamp or not stamp.startswith(date):
        return f"x-amz-date {stamp} does not match the scope date {date}"
    when = datetime.datetime.strptime(stamp, "%Y%m%dT%H%M%SZ").replace(tzinfo=datetime.timezone.utc)
    skew = abs((datetime.datetime.now(datetime.timezone.utc) - when).total_seconds())
    if skew > 300:
        return f"x-amz-date {stamp} is {skew:.0f}s away from now"
    if args.session_token and headers.get("x-amz-security-token") != args.session_token:
        return "x-amz-security-token missing or wrong"
    signed = m.group("signed").split(";")
    missing = [h for h in signed if h not in headers]
    if missing:
        return f"signed headers not sent: {missing}"
    split = urlsplit(raw_path)
    request = AWSRequest(
        method=method,
        url=f"http://{headers['host']}{split.path}",
        params=parse_qsl(split.query, keep_blank_values=True),
        data=body,
        headers={h: headers[h] for h in signed},
    )
    request.context["timestamp"] = stamp
    signer = SigV4Auth(Credentials(args.access_key, args.secret_key, args.session_token), service, region)
    expected_signed = signer.signed_headers(signer.headers_to_sign(request))
    if expected_signed != m.group("signed"):
        return f"SignedHeaders {m.group('signed')}, botocore would sign {expected_signed}"
    canonical = signer.canonical_request(request)
    expected = signer.signature(signer.string_to_sign(request, canonical), request)
    if expected != m.group("sig"):
        return f"signature mismatch; botocore's canonical request:\n{canonical}"
    return None


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def _handle(self):
        length = int(self.headers.get("content-length") or 0)
        body = self.rfile.read(length) if length else b""
        if self.path == "/__sigv4":
            with lock:
                payload = json.dumps(stats).encode()
            return self._reply(200, {"content-type": "application/json"}, payload)
        headers = {k.lower(): v for k, v in self.headers.items()}
        reason = verify(self.server.args, self.command, self.path, headers, body)
        if reason is not None:
            with lock:
                stats["refused"].append(f"{self.command} {self.path}: {reason}")
            message = json.dumps({"message": f"signature check failed: {reason}"}).encode()
            return self._reply(403, {"content-type": "application/json"}, message)
        with lock:
            stats["verified"] += 1
        forward = {
            k: v
            for k, v in self.headers.items()
            if k.lower() not in HOP_BY_HOP and k.lower() != "authorization" and not k.lower().startswith("x-amz-")
        }
        # A bearer token PyIceberg-style clients moved aside goes back where the catalog reads it.
        if "Original-Authorization" in forward:
            forward["Authorization"] = forward.pop("Original-Authorization")
        conn = http.client.HTTPConnection("127.0.0.1", self.server.args.upstream, timeout=60)
        conn.request(self.command, self.path, body=body or None, headers=forward)
        resp = conn.getresponse()
        data = resp.read()
        out = {k: v for k, v in resp.getheaders() if k.lower() not in HOP_BY_HOP}
        conn.close()
        self._reply(resp.status, out, data)

    def _reply(self, status, headers, data):
        self.send_response(status)
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    do_GET = do_POST = do_DELETE = do_HEAD = do_PUT = _handle

    def log_message(self, fmt, *a):
        print(fmt % a, flush=True)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--upstream", type=int, required=True)
    p.add_argument("--service", required=True)
    p.add_argument("--region", required=True)
    p.add_argument("--access-key", required=True)
    p.add_argument("--secret-key", required=True)
    p.add_argument("--session-token", default=None)
    args = p.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    server.args = args
    print(f"sigv4 proxy on {args.port} -> {args.upstream}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
