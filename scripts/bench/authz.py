#!/usr/bin/env python3
"""4 KiB PUT and GET with a 20-statement bucket policy with conditions vs
no policy, in one gateway run (docs/bench/authz.md).

    CAIRN=bin/cairn ROUNDS=2 DURATION=10s python3 scripts/bench/authz.py > docs/bench/authz.json

The bench user is a plain (non-admin) user owning both buckets. The
policy's statements all apply to every request (Principal "*", the
bucket's objects) and are rejected by their conditions, so each request
evaluates all 20 statements and their conditions. Cells alternate ABBA
per round so machine load hits both alike.
"""
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

import boto3
from botocore.config import Config

CAIRN = os.environ.get("CAIRN", "bin/cairn")
ROUNDS = int(os.environ.get("ROUNDS", "2"))
DURATION = os.environ.get("DURATION", "10s")
CONC = os.environ.get("CONCURRENCY", "16")
ADMIN = {"CAIRN_ACCESS_KEY": "benchadmin0000000000", "CAIRN_SECRET_KEY": "benchsecret0000000000000000000000000000000"}


def policy(bucket):
    sts = []
    for i in range(19):
        sts.append({
            "Sid": f"Team{i}", "Effect": "Allow", "Principal": "*",
            "Action": ["s3:GetObject", "s3:PutObject", "s3:ListBucket"],
            "Resource": [f"arn:aws:s3:::{bucket}", f"arn:aws:s3:::{bucket}/*"],
            "Condition": {"IpAddress": {"aws:SourceIp": [f"10.{i}.0.0/16"]},
                          "StringLike": {"aws:Referer": [f"https://team{i}.example.com/*"]},
                          "Bool": {"aws:SecureTransport": "true"},
                          "NumericLessThanEquals": {"s3:max-keys": "1000"}}})
    sts.append({"Sid": "OnlyLocal", "Effect": "Deny", "Principal": "*", "Action": "s3:*",
                "Resource": [f"arn:aws:s3:::{bucket}", f"arn:aws:s3:::{bucket}/*"],
                "Condition": {"NotIpAddress": {"aws:SourceIp": ["127.0.0.0/8", "::1/128"]}}})
    return json.dumps({"Version": "2012-10-17", "Statement": sts})


def main():
    work = tempfile.mkdtemp(prefix="cairn-authz-bench-")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ep = f"http://127.0.0.1:{port}"
    env = dict(os.environ, **ADMIN)
    srv = subprocess.Popen([CAIRN, "serve", "--data-dir", work, "--listen", f"127.0.0.1:{port}", "--log-level", "warn"], env=env)
    try:
        for _ in range(200):
            try:
                urllib.request.urlopen(ep + "/healthz")
                break
            except OSError:
                time.sleep(0.1)
        out = subprocess.run([CAIRN, "admin", "--endpoint", ep, "user", "create", "--uid", "benchuser"],
                             env=env, check=True, capture_output=True, text=True).stdout
        key = json.loads(out)["keys"][0]
        ak, sk = key["access_key"], key["secret_key"]
        s3 = boto3.client("s3", endpoint_url=ep, aws_access_key_id=ak, aws_secret_access_key=sk, region_name="us-east-1",
                          config=Config(s3={"addressing_style": "path"}))
        for b in ("az-nopolicy", "az-policy"):
            s3.create_bucket(Bucket=b)
        s3.put_bucket_policy(Bucket="az-policy", Policy=policy("az-policy"))
        cells = []
        for rnd in range(ROUNDS):
            for op in ("put", "get"):
                order = ["az-nopolicy", "az-policy"]
                if rnd % 2:
                    order.reverse()
                for b in order + order[::-1]:  # ABBA
                    r = subprocess.run([CAIRN, "bench", "s3", "--endpoint", ep, "--access-key", ak, "--secret-key", sk,
                                        "--bucket", b, "--op", op, "--size", "4KiB", "--concurrency", CONC,
                                        "--duration", DURATION, "--objects", "1000"],
                                       check=True, capture_output=True, text=True).stdout
                    d = json.loads(r[r.index("{"):])
                    if d.get("errors"):
                        sys.exit(f"{b} {op}: {d['errors']} errors: {d.get('first_error')}")
                    cells.append({"round": rnd, "op": op, "bucket": b, "ops_per_sec": d["ops_per_sec"],
                                  "p50_ms": d["p50_ms"], "p99_ms": d["p99_ms"]})
                    print(f"round {rnd} {op} {b}: {d['ops_per_sec']:.0f} ops/s p50 {d['p50_ms']} ms", file=sys.stderr)
        summary = {}
        for op in ("put", "get"):
            a = sum(c["ops_per_sec"] for c in cells if c["op"] == op and c["bucket"] == "az-nopolicy")
            b = sum(c["ops_per_sec"] for c in cells if c["op"] == op and c["bucket"] == "az-policy")
            summary[op] = {"no_policy_ops": a / (2 * ROUNDS), "policy_ops": b / (2 * ROUNDS), "ratio": b / a}
        print(json.dumps({"command": "CAIRN=%s ROUNDS=%d DURATION=%s CONCURRENCY=%s python3 scripts/bench/authz.py" % (CAIRN, ROUNDS, DURATION, CONC),
                          "summary": summary, "cells": cells}, indent=1))
    finally:
        srv.terminate()
        srv.wait()
        subprocess.run(["rm", "-rf", work])


if __name__ == "__main__":
    main()
