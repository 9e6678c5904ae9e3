"""Access control with boto3 against a running cairn: the access matrix
(owner, another user, anonymous, wrong secret × operations × private /
ACL grant / policy allow / policy deny / public access block), asserting
error codes and that a denied request changed nothing; presigned URLs under
a policy. Run by tests/python_test.go."""
import json
import os
import urllib.error
import urllib.parse
import urllib.request
import uuid

import boto3
import botocore
import pytest
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.config import Config
from botocore.credentials import Credentials

from cairnadmin import admin_call

ENDPOINT = os.environ["CAIRN_ENDPOINT"]
AK = os.environ["CAIRN_ACCESS_KEY"]
SK = os.environ["CAIRN_SECRET_KEY"]


def client(ak=None, sk=None, anonymous=False):
    # s3v4 also for presigned URLs (boto3 presigns with SigV2 by default).
    cfg = {"s3": {"addressing_style": "path"}, "retries": {"max_attempts": 1}, "signature_version": "s3v4"}
    if anonymous:
        cfg["signature_version"] = botocore.UNSIGNED
    return boto3.client("s3", endpoint_url=ENDPOINT, aws_access_key_id=ak or AK, aws_secret_access_key=sk or SK,
                        region_name="us-east-1", config=Config(**cfg))


@pytest.fixture(scope="module")
def env():
    suffix = uuid.uuid4().hex[:8]
    keys = {}
    for u in ("alice", "bob"):
        uid = f"{u}-{suffix}"
        q = urllib.parse.urlencode({"uid": uid, "display-name": u, "email": f"{uid}@example.com"})
        out = admin_call("PUT", "/admin/user?" + q)
        keys[u] = (uid, out["keys"][0]["access_key"], out["keys"][0]["secret_key"])
    c = {
        "owner": client(*keys["alice"][1:]),
        "bob": client(*keys["bob"][1:]),
        "anon": client(anonymous=True),
        "wrong": client(keys["bob"][1], "wrong-secret-wrong-secret-wrong-secret00"),
    }
    alice, bob = keys["alice"][0], keys["bob"][0]
    owner = c["owner"]
    buckets = {}
    for sh in ("private", "aclgrant", "polallow", "poldeny", "pab"):
        b = f"pyaz-{sh}-{suffix}"
        buckets[sh] = b
        owner.create_bucket(Bucket=b)
        extra = {}
        if sh == "aclgrant":
            extra = {"GrantFullControl": f'id="{alice}"', "GrantRead": f'id="{bob}"'}
        elif sh in ("poldeny", "pab"):
            extra = {"ACL": "public-read"}
        owner.put_object(Bucket=b, Key="obj", Body=b"data", **extra)
        for w in c:
            owner.put_object(Bucket=b, Key="del-" + w, Body=b"d")
        arn = f"arn:aws:s3:::{b}"
        if sh == "aclgrant":
            owner.put_bucket_acl(Bucket=b, GrantFullControl=f'id="{alice}"',
                                 GrantRead=f'emailAddress="{bob}@example.com"', GrantWrite=f'id="{bob}"')
        elif sh == "polallow":
            owner.put_bucket_policy(Bucket=b, Policy=json.dumps({"Version": "2012-10-17", "Statement": [
                {"Effect": "Allow", "Principal": {"AWS": f"arn:aws:iam:::user/{bob}"},
                 "Action": ["s3:GetObject", "s3:PutObject", "s3:DeleteObject"], "Resource": arn + "/*"},
                {"Effect": "Allow", "Principal": {"AWS": bob}, "Action": "s3:ListBucket", "Resource": arn},
                {"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject", "Resource": arn + "/*"}]}))
        elif sh == "poldeny":
            owner.put_bucket_acl(Bucket=b, ACL="public-read-write")
            owner.put_bucket_policy(Bucket=b, Policy=json.dumps({"Statement": [
                {"Effect": "Deny", "Principal": {"AWS": bob}, "Action": "s3:*", "Resource": [arn, arn + "/*"]}]}))
        elif sh == "pab":
            owner.put_bucket_acl(Bucket=b, ACL="public-read-write")
            owner.put_bucket_policy(Bucket=b, Policy=json.dumps({"Statement": [
                {"Effect": "Allow", "Principal": "*", "Action": ["s3:GetObject", "s3:ListBucket"], "Resource": [arn, arn + "/*"]}]}))
            owner.put_public_access_block(Bucket=b, PublicAccessBlockConfiguration={
                "BlockPublicAcls": True, "IgnorePublicAcls": True, "BlockPublicPolicy": False, "RestrictPublicBuckets": True})
    return {"clients": c, "buckets": buckets, "keys": keys}


OK, AD, SIG = None, "AccessDenied", "SignatureDoesNotMatch"
# op: sharing: (owner, bob, anon)
EXPECT = {
    "list_objects_v2": {"private": (OK, AD, AD), "aclgrant": (OK, OK, AD), "polallow": (OK, OK, AD), "poldeny": (OK, AD, OK), "pab": (OK, AD, AD)},
    "get_object": {"private": (OK, AD, AD), "aclgrant": (OK, OK, AD), "polallow": (OK, OK, OK), "poldeny": (OK, AD, OK), "pab": (OK, AD, AD)},
    "put_object": {"private": (OK, AD, AD), "aclgrant": (OK, OK, AD), "polallow": (OK, OK, AD), "poldeny": (OK, AD, OK), "pab": (OK, AD, AD)},
    "delete_object": {"private": (OK, AD, AD), "aclgrant": (OK, OK, AD), "polallow": (OK, OK, AD), "poldeny": (OK, AD, OK), "pab": (OK, AD, AD)},
    "get_bucket_acl": {sh: (OK, AD, AD) for sh in ("private", "aclgrant", "polallow", "poldeny", "pab")},
    "get_bucket_policy": {"private": ("NoSuchBucketPolicy", AD, AD), "aclgrant": ("NoSuchBucketPolicy", AD, AD),
                          "polallow": (OK, AD, AD), "poldeny": (OK, AD, AD), "pab": (OK, AD, AD)},
}


def run(c, op, b, who):
    try:
        if op == "list_objects_v2":
            c.list_objects_v2(Bucket=b)
        elif op == "get_object":
            assert c.get_object(Bucket=b, Key="obj")["Body"].read() == b"data"
        elif op == "put_object":
            c.put_object(Bucket=b, Key="put-" + who, Body=b"p")
        elif op == "delete_object":
            c.delete_object(Bucket=b, Key="del-" + who)
        elif op == "get_bucket_acl":
            c.get_bucket_acl(Bucket=b)
        elif op == "get_bucket_policy":
            c.get_bucket_policy(Bucket=b)
    except botocore.exceptions.ClientError as e:
        return e.response["Error"]["Code"]
    return None


def snapshot(b):
    admin = client()
    keys = sorted(o["Key"] for o in admin.list_objects_v2(Bucket=b).get("Contents", []))
    grants = admin.get_bucket_acl(Bucket=b)["Grants"]
    return keys, sorted(json.dumps(g, sort_keys=True) for g in grants)


@pytest.mark.parametrize("op", sorted(EXPECT))
@pytest.mark.parametrize("sharing", ["private", "aclgrant", "polallow", "poldeny", "pab"])
@pytest.mark.parametrize("who", ["bob", "anon", "wrong", "owner"])
def test_matrix(env, who, sharing, op):
    b = env["buckets"][sharing]
    owner, bob, anon = EXPECT[op][sharing]
    want = {"owner": owner, "bob": bob, "anon": anon, "wrong": SIG}[who]
    before = snapshot(b)
    got = run(env["clients"][who], op, b, who)
    assert got == want
    if want is not OK:
        assert snapshot(b) == before, "a denied request changed the bucket"


def test_missing_bucket_is_404_for_anonymous(env):
    with pytest.raises(botocore.exceptions.ClientError) as e:
        env["clients"]["anon"].get_object(Bucket="pyaz-no-such-bucket", Key="k")
    assert e.value.response["Error"]["Code"] == "NoSuchBucket"


def test_presigned_under_policy(env):
    owner, bob = env["clients"]["owner"], env["clients"]["bob"]
    url = bob.generate_presigned_url("get_object", Params={"Bucket": env["buckets"]["polallow"], "Key": "obj"}, ExpiresIn=60)
    with urllib.request.urlopen(url) as r:
        assert r.read() == b"data"
    url = bob.generate_presigned_url("get_object", Params={"Bucket": env["buckets"]["poldeny"], "Key": "obj"}, ExpiresIn=60)
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(url)
    assert e.value.code == 403
    url = owner.generate_presigned_url("get_object", Params={"Bucket": env["buckets"]["private"], "Key": "obj"}, ExpiresIn=60)
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(url.replace("X-Amz-Expires=60", "X-Amz-Expires=604801"))
    assert e.value.code == 400 and b"AuthorizationQueryParametersError" in e.value.read()
    url = owner.generate_presigned_url("get_object", Params={"Bucket": env["buckets"]["private"], "Key": "obj"}, ExpiresIn=1)
    # Re-date the URL a minute into the past: expired, whatever the clock does.
    import datetime, re
    old = (datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(minutes=1)).strftime("%Y%m%dT%H%M%SZ")
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(re.sub(r"X-Amz-Date=\w+", "X-Amz-Date=" + old, url))
    assert e.value.code == 403 and b"<Code>AccessDenied</Code>" in e.value.read()


def test_owner_display_names(env):
    owner = env["clients"]["owner"]
    uid = env["keys"]["alice"][0]
    b = env["buckets"]["private"]
    assert owner.list_buckets()["Owner"] == {"ID": uid, "DisplayName": "alice"}
    assert owner.get_bucket_acl(Bucket=b)["Owner"] == {"ID": uid, "DisplayName": "alice"}
    objs = owner.list_objects_v2(Bucket=b, FetchOwner=True)["Contents"]
    assert all(o["Owner"] == {"ID": uid, "DisplayName": "alice"} for o in objs)
    objs = owner.list_objects(Bucket=b)["Contents"]
    assert all(o["Owner"]["ID"] == uid for o in objs)
    assert owner.get_object_acl(Bucket=b, Key="obj")["Owner"]["ID"] == uid
