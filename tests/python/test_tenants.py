"""Tenants (RGW multitenancy) with boto3 against a running cairn: users in
two tenants (created as radosgw-admin does, --tenant T --uid U and
'T$U'), each with a bucket and a topic of the same names. Every S3 and SNS
call of one on the other's bucket (addressed 'tenant:bucket', path-style)
or topic is refused, and nothing changes, until a bucket policy naming
arn:aws:iam::<tenant>:user/<uid> grants it. Run by tests/python_test.go."""
import json
import os
import urllib.parse
import urllib.request
import uuid

import boto3
import botocore
import botocore.handlers
import pytest
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.config import Config
from botocore.credentials import Credentials

from cairnadmin import admin_call

ENDPOINT = os.environ["CAIRN_ENDPOINT"]
AK = os.environ["CAIRN_ACCESS_KEY"]
SK = os.environ["CAIRN_SECRET_KEY"]
BUCKET = "shared"


def s3(creds):
    c = boto3.client("s3", endpoint_url=ENDPOINT, aws_access_key_id=creds[0], aws_secret_access_key=creds[1],
                     region_name="us-east-1",
                     config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}))
    # botocore refuses ':' in bucket names before sending; RGW's tenants
    # need it (the usual boto3 set-up against RGW).
    c.meta.events.unregister("before-parameter-build.s3", botocore.handlers.validate_bucket_name)
    return c


def sns(creds):
    return boto3.client("sns", endpoint_url=ENDPOINT, aws_access_key_id=creds[0], aws_secret_access_key=creds[1],
                        region_name="us-east-1", config=Config(retries={"max_attempts": 1}))


def code(fn):
    try:
        fn()
    except botocore.exceptions.ClientError as e:
        return e.response["Error"]["Code"]
    return "OK"


@pytest.fixture(scope="module")
def tenants():
    s = uuid.uuid4().hex[:8]
    out = []
    for tenant, q in (("ta" + s, {"tenant": "ta" + s, "uid": "bob"}), ("tb" + s, {"uid": "tb" + s + "$bob"})):
        u = admin_call("PUT", "/admin/user?" + urllib.parse.urlencode(q))
        assert u["user_id"] == tenant + "$bob"
        creds = (u["keys"][0]["access_key"], u["keys"][0]["secret_key"])
        c = s3(creds)
        c.create_bucket(Bucket=BUCKET)
        c.put_object(Bucket=BUCKET, Key="k", Body=tenant.encode())
        arn = sns(creds).create_topic(Name="events", Attributes={"push-endpoint": "http://127.0.0.1:9"})["TopicArn"]
        assert arn == "arn:aws:sns:default:%s:events" % tenant
        out.append({"tenant": tenant, "creds": creds, "arn": arn})
    return out


def test_own_namespace(tenants):
    for t in tenants:
        c = s3(t["creds"])
        assert c.get_object(Bucket=BUCKET, Key="k")["Body"].read() == t["tenant"].encode()
        assert c.get_object(Bucket=t["tenant"] + ":" + BUCKET, Key="k")["Body"].read() == t["tenant"].encode()
        assert [b["Name"] for b in c.list_buckets()["Buckets"]] == [BUCKET]
        assert [x["TopicArn"] for x in sns(t["creds"]).list_topics()["Topics"]] == [t["arn"]]


def test_cross_tenant_refused(tenants):
    for a, b in ((tenants[0], tenants[1]), (tenants[1], tenants[0])):
        c, other = s3(a["creds"]), b["tenant"] + ":" + BUCKET
        policy = json.dumps({"Statement": [{"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject",
                                            "Resource": "arn:aws:s3:::shared/*"}]})
        calls = {
            "list_objects_v2": lambda: c.list_objects_v2(Bucket=other),
            "head_bucket": lambda: c.head_bucket(Bucket=other),
            "get_object": lambda: c.get_object(Bucket=other, Key="k"),
            "put_object": lambda: c.put_object(Bucket=other, Key="k", Body=b"mine"),
            "copy_object": lambda: c.copy_object(Bucket=BUCKET, Key="stolen", CopySource=other + "/k"),
            "delete_object": lambda: c.delete_object(Bucket=other, Key="k"),
            "get_bucket_acl": lambda: c.get_bucket_acl(Bucket=other),
            "put_bucket_acl": lambda: c.put_bucket_acl(Bucket=other, ACL="public-read"),
            "get_object_acl": lambda: c.get_object_acl(Bucket=other, Key="k"),
            "get_bucket_policy": lambda: c.get_bucket_policy(Bucket=other),
            "put_bucket_policy": lambda: c.put_bucket_policy(Bucket=other, Policy=policy),
            "get_bucket_notification_configuration": lambda: c.get_bucket_notification_configuration(Bucket=other),
            "put_bucket_notification_configuration": lambda: c.put_bucket_notification_configuration(
                Bucket=other, NotificationConfiguration={}),
            "notification to the other's topic": lambda: c.put_bucket_notification_configuration(
                Bucket=BUCKET, NotificationConfiguration={"TopicConfigurations": [
                    {"Id": "x", "TopicArn": b["arn"], "Events": ["s3:ObjectCreated:*"]}]}),
            "delete_bucket": lambda: c.delete_bucket(Bucket=other),
        }
        for name, fn in calls.items():
            assert code(fn) in ("AccessDenied", "403"), name
        n = sns(a["creds"])
        for name, fn in {
            "get_topic_attributes": lambda: n.get_topic_attributes(TopicArn=b["arn"]),
            "set_topic_attributes": lambda: n.set_topic_attributes(TopicArn=b["arn"], AttributeName="push-endpoint",
                                                                   AttributeValue="http://127.0.0.1:10"),
            "delete_topic": lambda: n.delete_topic(TopicArn=b["arn"]),
        }.items():
            assert code(fn) == "AuthorizationError", name
    # Nothing changed.
    for t in tenants:
        c = s3(t["creds"])
        assert [o["Key"] for o in c.list_objects_v2(Bucket=BUCKET)["Contents"]] == ["k"]
        assert c.get_object(Bucket=BUCKET, Key="k")["Body"].read() == t["tenant"].encode()
        attrs = sns(t["creds"]).get_topic_attributes(TopicArn=t["arn"])["Attributes"]
        assert "127.0.0.1:9" in json.dumps(attrs)


def test_policy_grant(tenants):
    ta, tb = tenants
    owner = s3(ta["creds"])
    owner.put_bucket_policy(Bucket=BUCKET, Policy=json.dumps({"Statement": [{
        "Effect": "Allow", "Principal": {"AWS": "arn:aws:iam::%s:user/bob" % tb["tenant"]},
        "Action": "s3:GetObject", "Resource": "arn:aws:s3:::shared/*"}]}))
    try:
        c = s3(tb["creds"])
        assert c.get_object(Bucket=ta["tenant"] + ":" + BUCKET, Key="k")["Body"].read() == ta["tenant"].encode()
        assert code(lambda: c.put_object(Bucket=ta["tenant"] + ":" + BUCKET, Key="k2", Body=b"x")) == "AccessDenied"
        # A policy may not name another tenant's bucket.
        assert code(lambda: owner.put_bucket_policy(Bucket=BUCKET, Policy=json.dumps({"Statement": [{
            "Effect": "Allow", "Principal": "*", "Action": "s3:GetObject",
            "Resource": "arn:aws:s3::%s:shared/*" % tb["tenant"]}]}))) == "MalformedPolicy"
    finally:
        owner.delete_bucket_policy(Bucket=BUCKET)
    assert code(lambda: s3(tb["creds"]).get_object(Bucket=ta["tenant"] + ":" + BUCKET, Key="k")) == "AccessDenied"


def test_admin_user_policy_binds_to_tenant(tenants):
    """An admin's PutUserPolicy on 'tenant$uid' (RGW's user-policy
    capability): the policy's bare arn:aws:s3:::shared is that user's
    tenant's bucket, and it binds only that user."""
    ta, tb = tenants
    admin = boto3.client("iam", endpoint_url=ENDPOINT, aws_access_key_id=AK, aws_secret_access_key=SK,
                         region_name="us-east-1")
    uid = ta["tenant"] + "$bob"
    admin.put_user_policy(UserName=uid, PolicyName="nowrite", PolicyDocument=json.dumps({"Statement": [{
        "Effect": "Deny", "Action": "s3:PutObject", "Resource": "arn:aws:s3:::shared/*"}]}))
    try:
        assert admin.get_user_policy(UserName=uid, PolicyName="nowrite")["PolicyName"] == "nowrite"
        assert code(lambda: s3(ta["creds"]).put_object(Bucket=BUCKET, Key="new", Body=b"x")) == "AccessDenied"
        s3(tb["creds"]).put_object(Bucket=BUCKET, Key="new", Body=b"x")
        s3(tb["creds"]).delete_object(Bucket=BUCKET, Key="new")
    finally:
        admin.delete_user_policy(UserName=uid, PolicyName="nowrite")
