#!/usr/bin/env python3
"""4 KiB PUT and GET by an STS role session vs the account root, in one
gateway run (docs/bench/sts.md).

    CAIRN=bin/cairn ROUNDS=2 DURATION=10s flock /tmp/cairn-bench.lock python3 scripts/bench/sts.py > docs/bench/sts.json

One `cairn serve` (embedded backend), one IAM account. Its root owns two
buckets with the same bucket policy (5 statements naming the role session,
the role and other principals, with conditions). The role has a
10-statement identity policy: nine Allow statements whose resources or
conditions miss, then the one that allows, so each request by the session
evaluates all ten, plus the bucket policy and a session policy. The session
signs every request with x-amz-security-token. Cells alternate ABBA per
round (root, session, session, root) so machine load hits both alike.
"""
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

import boto3
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.config import Config
from botocore.credentials import Credentials

CAIRN = os.environ.get("CAIRN", "bin/cairn")
ROUNDS = int(os.environ.get("ROUNDS", "2"))
DURATION = os.environ.get("DURATION", "10s")
CONC = os.environ.get("CONCURRENCY", "16")
ADMIN = {"CAIRN_ACCESS_KEY": "benchadmin0000000000", "CAIRN_SECRET_KEY": "benchsecret0000000000000000000000000000000"}


def admin(ep, method, path):
    req = AWSRequest(method=method, url=ep + path, headers={"X-Amz-Content-Sha256": "UNSIGNED-PAYLOAD"})
    SigV4Auth(Credentials(ADMIN["CAIRN_ACCESS_KEY"], ADMIN["CAIRN_SECRET_KEY"]), "s3", "us-east-1").add_auth(req)
    p = req.prepare()
    with urllib.request.urlopen(urllib.request.Request(p.url, method=method, headers=dict(p.headers))) as r:
        return json.loads(r.read() or b"{}")


def identity_policy(bucket):
    sts = []
    for i in range(9):  # miss by resource or condition
        sts.append({"Sid": f"Team{i}", "Effect": "Allow", "Action": ["s3:GetObject", "s3:PutObject"],
                    "Resource": [f"arn:aws:s3:::team{i}-data/*", f"arn:aws:s3:::{bucket}/team{i}/*"],
                    "Condition": {"IpAddress": {"aws:SourceIp": [f"10.{i}.0.0/16"]}}})
    # CreateBucket: `cairn bench s3` creates its bucket if missing (here
    # it exists: BucketAlreadyOwnedByYou).
    sts.append({"Sid": "Bench", "Effect": "Allow", "Action": ["s3:GetObject", "s3:PutObject", "s3:ListBucket", "s3:CreateBucket"],
                "Resource": [f"arn:aws:s3:::{bucket}", f"arn:aws:s3:::{bucket}/*"],
                "Condition": {"Bool": {"aws:SecureTransport": "false"}}})
    return json.dumps({"Version": "2012-10-17", "Statement": sts})


def bucket_policy(bucket, acct):
    res = [f"arn:aws:s3:::{bucket}", f"arn:aws:s3:::{bucket}/*"]
    sts = [{"Sid": f"Other{i}", "Effect": "Allow", "Principal": {"AWS": f"arn:aws:iam::{acct}:user/u{i}"},
            "Action": ["s3:GetObject", "s3:PutObject"], "Resource": res} for i in range(3)]
    sts.append({"Sid": "Role", "Effect": "Allow", "Principal": {"AWS": f"arn:aws:iam::{acct}:role/bench"},
                "Action": "s3:ListBucket", "Resource": res,
                "Condition": {"IpAddress": {"aws:SourceIp": ["127.0.0.0/8"]}}})
    sts.append({"Sid": "OnlyLocal", "Effect": "Deny", "Principal": "*", "Action": "s3:*", "Resource": res,
                "Condition": {"NotIpAddress": {"aws:SourceIp": ["127.0.0.0/8", "::1/128"]}}})
    return json.dumps({"Version": "2012-10-17", "Statement": sts})


def main():
    work = tempfile.mkdtemp(prefix="cairn-sts-bench-")
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
        acct = admin(ep, "PUT", "/admin/account?" + urllib.parse.urlencode({"account-name": "bench"}))["id"]
        root = admin(ep, "PUT", "/admin/user?" + urllib.parse.urlencode({"uid": "bench-root", "account-id": acct, "account-root": "true"}))
        rk, rs = root["keys"][0]["access_key"], root["keys"][0]["secret_key"]
        kw = dict(endpoint_url=ep, aws_access_key_id=rk, aws_secret_access_key=rs, region_name="us-east-1")
        s3 = boto3.client("s3", config=Config(s3={"addressing_style": "path"}), **kw)
        iam = boto3.client("iam", **kw)
        stsc = boto3.client("sts", **kw)
        buckets = {"root": "sts-root", "session": "sts-session"}
        for b in buckets.values():
            s3.create_bucket(Bucket=b)
            s3.put_bucket_policy(Bucket=b, Policy=bucket_policy(b, acct))
        trust = json.dumps({"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Principal": {"AWS": f"arn:aws:iam::{acct}:root"}, "Action": "sts:AssumeRole"}]})
        iam.create_role(RoleName="bench", AssumeRolePolicyDocument=trust, MaxSessionDuration=43200)
        iam.put_role_policy(RoleName="bench", PolicyName="bench", PolicyDocument=identity_policy(buckets["session"]))
        session_policy = json.dumps({"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}]})
        c = stsc.assume_role(RoleArn=f"arn:aws:iam::{acct}:role/bench", RoleSessionName="bench", DurationSeconds=43200,
                             Policy=session_policy)["Credentials"]
        who = {"root": (rk, rs, ""), "session": (c["AccessKeyId"], c["SecretAccessKey"], c["SessionToken"])}
        cells = []
        for rnd in range(ROUNDS):
            for op in ("put", "get"):
                order = ["root", "session"]
                if rnd % 2:
                    order.reverse()
                for w in order + order[::-1]:  # ABBA
                    ak, sk, tok = who[w]
                    args = [CAIRN, "bench", "s3", "--endpoint", ep, "--access-key", ak, "--secret-key", sk,
                            "--bucket", buckets[w], "--op", op, "--size", "4KiB", "--concurrency", CONC,
                            "--duration", DURATION, "--objects", "1000"]
                    if tok:
                        args += ["--session-token", tok]
                    p = subprocess.run(args, capture_output=True, text=True)
                    if p.returncode:
                        sys.exit(f"{w} {op}: {p.stderr}")
                    r = p.stdout
                    d = json.loads(r[r.index("{"):])
                    if d.get("errors"):
                        sys.exit(f"{w} {op}: {d['errors']} errors: {d.get('first_error')}")
                    cells.append({"round": rnd, "op": op, "who": w, "ops_per_sec": d["ops_per_sec"],
                                  "p50_ms": d["p50_ms"], "p99_ms": d["p99_ms"]})
                    print(f"round {rnd} {op} {w}: {d['ops_per_sec']:.0f} ops/s p50 {d['p50_ms']} ms", file=sys.stderr)
        summary = {}
        for op in ("put", "get"):
            a = sum(c["ops_per_sec"] for c in cells if c["op"] == op and c["who"] == "root")
            b = sum(c["ops_per_sec"] for c in cells if c["op"] == op and c["who"] == "session")
            summary[op] = {"root_ops": a / (2 * ROUNDS), "session_ops": b / (2 * ROUNDS), "ratio": b / a}
        print(json.dumps({"command": "CAIRN=%s ROUNDS=%d DURATION=%s CONCURRENCY=%s flock /tmp/cairn-bench.lock python3 scripts/bench/sts.py" % (CAIRN, ROUNDS, DURATION, CONC),
                          "summary": summary, "cells": cells}, indent=1))
    finally:
        srv.terminate()
        srv.wait()
        subprocess.run(["rm", "-rf", work])


if __name__ == "__main__":
    main()
