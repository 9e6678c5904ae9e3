"""Paging of IAM listings with boto3's paginators and the aws CLI against a
running cairn: MaxItems, Marker and IsTruncated on every paged listing,
AWS's ValidationError for a bad MaxItems or Marker. Run by
tests/python_test.go (and tests/ceph_iam_test.go over RADOS)."""
import json
import os
import subprocess
import urllib.parse
import urllib.request
import uuid

import boto3
import botocore
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.config import Config
from botocore.credentials import Credentials

from cairnadmin import account, admin_call

ENDPOINT = os.environ["CAIRN_ENDPOINT"]
AK = os.environ["CAIRN_ACCESS_KEY"]
SK = os.environ["CAIRN_SECRET_KEY"]

S3_FULL = "arn:aws:iam::aws:policy/AmazonS3FullAccess"
S3_READ = "arn:aws:iam::aws:policy/AmazonS3ReadOnlyAccess"
SNS_READ = "arn:aws:iam::aws:policy/AmazonSNSReadOnlyAccess"
DOC = json.dumps({"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "s3:GetObject", "Resource": "*"}]})
TRUST = json.dumps({"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Principal": {"AWS": "*"}, "Action": "sts:AssumeRole"}]})


def root_of(name):
    _, ak, sk = account(name)
    return ak, sk



def iam(creds, validate=True):
    return boto3.client("iam", endpoint_url=ENDPOINT, aws_access_key_id=creds[0], aws_secret_access_key=creds[1],
                        region_name="us-east-1",
                        config=Config(retries={"max_attempts": 1}, parameter_validation=validate))


def pages(c, op, key, **kw):
    """All pages of op with two items a page: (items, page count)."""
    items, n = [], 0
    for p in c.get_paginator(op).paginate(PaginationConfig={"PageSize": 2}, **kw):
        n += 1
        items += p[key]
        assert len(p[key]) <= 2
    return items, n


def code(fn):
    try:
        fn()
    except botocore.exceptions.ClientError as e:
        return e.response["Error"]["Code"]
    return "OK"


def test_boto3_paginators_and_cli():
    creds = root_of("pg-" + uuid.uuid4().hex[:8])
    c = iam(creds)
    users = ["u%d" % i for i in range(5)]
    for u in users:
        c.create_user(UserName=u, Path="/team/" if u in ("u1", "u3") else "/")
    for g in ("g0", "g1", "g2"):
        c.create_group(GroupName=g)
        c.add_user_to_group(GroupName=g, UserName="u0")
    for g in ("u1", "u2", "u4"):
        c.add_user_to_group(GroupName="g0", UserName=g)
    for r in ("r0", "r1", "r2"):
        c.create_role(RoleName=r, AssumeRolePolicyDocument=TRUST)
    keys = {c.create_access_key(UserName="u0")["AccessKey"]["AccessKeyId"] for _ in range(2)}
    for p in ("p0", "p1", "p2"):
        c.put_user_policy(UserName="u0", PolicyName=p, PolicyDocument=DOC)
        c.put_group_policy(GroupName="g0", PolicyName=p, PolicyDocument=DOC)
        c.put_role_policy(RoleName="r0", PolicyName=p, PolicyDocument=DOC)
    for a in (S3_FULL, S3_READ, SNS_READ):
        c.attach_user_policy(UserName="u0", PolicyArn=a)
        c.attach_group_policy(GroupName="g0", PolicyArn=a)
        c.attach_role_policy(RoleName="r0", PolicyArn=a)

    got, n = pages(c, "list_users", "Users")
    assert sorted(u["UserName"] for u in got) == users and n == 3, (got, n)
    got, n = pages(c, "list_users", "Users", PathPrefix="/team/")
    assert [u["UserName"] for u in got] == ["u1", "u3"] and n == 1
    got, n = pages(c, "list_groups", "Groups")
    assert [g["GroupName"] for g in got] == ["g0", "g1", "g2"] and n == 2
    got, n = pages(c, "get_group", "Users", GroupName="g0")
    assert [u["UserName"] for u in got] == ["u0", "u1", "u2", "u4"] and n == 2
    got, n = pages(c, "list_groups_for_user", "Groups", UserName="u0")
    assert [g["GroupName"] for g in got] == ["g0", "g1", "g2"] and n == 2
    got, n = pages(c, "list_roles", "Roles")
    assert [r["RoleName"] for r in got] == ["r0", "r1", "r2"] and n == 2
    got, n = pages(c, "list_access_keys", "AccessKeyMetadata", UserName="u0")
    assert {k["AccessKeyId"] for k in got} == keys
    got = c.list_access_keys(UserName="u0", MaxItems=1)
    assert len(got["AccessKeyMetadata"]) == 1 and got["IsTruncated"] and got["Marker"]
    for op, kw in (("list_user_policies", {"UserName": "u0"}), ("list_group_policies", {"GroupName": "g0"}),
                   ("list_role_policies", {"RoleName": "r0"})):
        got, n = pages(c, op, "PolicyNames", **kw)
        assert got == ["p0", "p1", "p2"] and n == 2, (op, got, n)
    for op, kw in (("list_attached_user_policies", {"UserName": "u0"}),
                   ("list_attached_group_policies", {"GroupName": "g0"}),
                   ("list_attached_role_policies", {"RoleName": "r0"})):
        got, n = pages(c, op, "AttachedPolicies", **kw)
        assert sorted(p["PolicyArn"] for p in got) == sorted([S3_FULL, S3_READ, SNS_READ]) and n == 2, (op, got, n)
        # AWS's managed policies all sit at path "/".
        got, _ = pages(c, op, "AttachedPolicies", PathPrefix="/service-role/", **kw)
        assert got == [], (op, got)

    # A Marker stays valid when an item already returned goes away.
    first = c.list_users(MaxItems=2)
    assert first["IsTruncated"] and [u["UserName"] for u in first["Users"]] == ["u0", "u1"]
    c.remove_user_from_group(GroupName="g0", UserName="u1")
    c.delete_user(UserName="u1")
    rest = c.list_users(Marker=first["Marker"])
    assert [u["UserName"] for u in rest["Users"]] == ["u2", "u3", "u4"] and not rest["IsTruncated"]
    assert "Marker" not in rest

    # AWS's errors for a bad MaxItems or Marker (sent past boto3's own checks).
    raw = iam(creds, validate=False)
    assert code(lambda: raw.list_users(MaxItems=0)) == "ValidationError"
    assert code(lambda: raw.list_roles(MaxItems=1001)) == "ValidationError"
    assert code(lambda: raw.list_groups(Marker="!!not-a-marker")) == "ValidationError"

    # The aws CLI pages by itself (--page-size) and resumes from a token.
    env = dict(os.environ, AWS_ACCESS_KEY_ID=creds[0], AWS_SECRET_ACCESS_KEY=creds[1], AWS_DEFAULT_REGION="us-east-1")
    env.pop("AWS_PROFILE", None)

    def cli(*args):
        r = subprocess.run(["aws", "--endpoint-url", ENDPOINT, "--output", "json", "iam", *args], env=env,
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, (args, r.stdout, r.stderr)
        return json.loads(r.stdout)
    out = cli("list-users", "--page-size", "1")
    assert [u["UserName"] for u in out["Users"]] == ["u0", "u2", "u3", "u4"]
    out = cli("list-roles", "--max-items", "2")
    assert [r["RoleName"] for r in out["Roles"]] == ["r0", "r1"] and out["NextToken"]
    out = cli("list-roles", "--max-items", "2", "--starting-token", out["NextToken"])
    assert [r["RoleName"] for r in out["Roles"]] == ["r2"] and "NextToken" not in out
