"""IAM accounts with the aws CLI (aws iam) and boto3 against a running
cairn: an operator makes two accounts and their roots (admin API, as
`cairn admin account create` / `user create --account-root` do); the root
manages users, keys and policies with `aws iam`; boto3's S3 client checks
what each identity may do, same-account and cross-account. Run by
tests/python_test.go."""
import json
import os
import subprocess
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

from cairnadmin import account, admin_call

ENDPOINT = os.environ["CAIRN_ENDPOINT"]
AK = os.environ["CAIRN_ACCESS_KEY"]
SK = os.environ["CAIRN_SECRET_KEY"]


def aws(creds, *args, check=True):
    env = dict(os.environ, AWS_ACCESS_KEY_ID=creds[0], AWS_SECRET_ACCESS_KEY=creds[1], AWS_DEFAULT_REGION="us-east-1")
    env.pop("AWS_PROFILE", None)
    r = subprocess.run(["aws", "--endpoint-url", ENDPOINT, "--output", "json", *args], env=env,
                       capture_output=True, text=True, timeout=120)
    if check and r.returncode != 0:
        raise AssertionError(f"aws {args}: {r.returncode}\n{r.stdout}\n{r.stderr}")
    return r


def s3(creds):
    return boto3.client("s3", endpoint_url=ENDPOINT, aws_access_key_id=creds[0], aws_secret_access_key=creds[1],
                        region_name="us-east-1",
                        config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}))


def code(fn):
    try:
        fn()
    except botocore.exceptions.ClientError as e:
        return e.response["Error"]["Code"]
    return "OK"


@pytest.fixture(scope="module")
def env():
    s = uuid.uuid4().hex[:8]
    a1, a2 = account("one-" + s), account("two-" + s)
    return {"s": s, "a1": a1, "a2": a2, "root1": a1[1:], "root2": a2[1:]}


def test_cli_user_keys_policies(env, tmp_path):
    root = env["root1"]
    bucket = "iam-cli-" + env["s"]
    s3(root).create_bucket(Bucket=bucket)
    s3(root).put_object(Bucket=bucket, Key="docs/a", Body=b"A")

    user = json.loads(aws(root, "iam", "create-user", "--user-name", "dev", "--path", "/team/").stdout)["User"]
    assert user["Arn"] == f"arn:aws:iam::{env['a1'][0]}:user/team/dev"
    dup = aws(root, "iam", "create-user", "--user-name", "DEV", check=False)
    assert dup.returncode != 0 and "EntityAlreadyExists" in dup.stderr
    key = json.loads(aws(root, "iam", "create-access-key", "--user-name", "dev").stdout)["AccessKey"]
    dev = (key["AccessKeyId"], key["SecretAccessKey"])
    keys = json.loads(aws(root, "iam", "list-access-keys", "--user-name", "dev").stdout)["AccessKeyMetadata"]
    assert [k["AccessKeyId"] for k in keys] == [key["AccessKeyId"]] and keys[0]["Status"] == "Active"

    # Nothing before a policy, exactly the policy after.
    assert code(lambda: s3(dev).get_object(Bucket=bucket, Key="docs/a")) == "AccessDenied"
    doc = tmp_path / "p.json"
    doc.write_text(json.dumps({"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Action": ["s3:GetObject", "s3:ListBucket"],
         "Resource": [f"arn:aws:s3:::{bucket}", f"arn:aws:s3:::{bucket}/*"]}]}))
    aws(root, "iam", "put-user-policy", "--user-name", "dev", "--policy-name", "read", "--policy-document", f"file://{doc}")
    assert s3(dev).get_object(Bucket=bucket, Key="docs/a")["Body"].read() == b"A"
    assert [o["Key"] for o in s3(dev).list_objects_v2(Bucket=bucket)["Contents"]] == ["docs/a"]
    assert code(lambda: s3(dev).put_object(Bucket=bucket, Key="docs/b", Body=b"B")) == "AccessDenied"
    assert code(lambda: s3(root).head_object(Bucket=bucket, Key="docs/b")) == "404"
    got = json.loads(aws(root, "iam", "get-user-policy", "--user-name", "dev", "--policy-name", "read").stdout)
    assert got["PolicyDocument"]["Statement"][0]["Action"] == ["s3:GetObject", "s3:ListBucket"]
    names = json.loads(aws(root, "iam", "list-user-policies", "--user-name", "dev").stdout)["PolicyNames"]
    assert names == ["read"]

    # A malformed document: MalformedPolicyDocument, nothing changed.
    doc.write_text('{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:*","Resource":"*"}]}')
    bad = aws(root, "iam", "put-user-policy", "--user-name", "dev", "--policy-name", "read",
              "--policy-document", f"file://{doc}", check=False)
    assert bad.returncode != 0 and "MalformedPolicyDocument" in bad.stderr
    assert code(lambda: s3(dev).put_object(Bucket=bucket, Key="docs/b", Body=b"B")) == "AccessDenied"
    assert s3(dev).get_object(Bucket=bucket, Key="docs/a")["Body"].read() == b"A"

    # Managed policies by ARN.
    aws(root, "iam", "attach-user-policy", "--user-name", "dev", "--policy-arn", "arn:aws:iam::aws:policy/AmazonS3FullAccess")
    attached = json.loads(aws(root, "iam", "list-attached-user-policies", "--user-name", "dev").stdout)["AttachedPolicies"]
    assert attached == [{"PolicyName": "AmazonS3FullAccess", "PolicyArn": "arn:aws:iam::aws:policy/AmazonS3FullAccess"}]
    s3(dev).put_object(Bucket=bucket, Key="docs/b", Body=b"B")
    unknown = aws(root, "iam", "attach-user-policy", "--user-name", "dev", "--policy-arn", "arn:aws:iam::aws:policy/NoSuchPolicy", check=False)
    assert unknown.returncode != 0 and "NoSuchEntity" in unknown.stderr
    aws(root, "iam", "detach-user-policy", "--user-name", "dev", "--policy-arn", "arn:aws:iam::aws:policy/AmazonS3FullAccess")
    assert code(lambda: s3(dev).put_object(Bucket=bucket, Key="docs/c", Body=b"C")) == "AccessDenied"

    # The user cannot administer IAM without a policy saying so.
    denied = aws(dev, "iam", "create-user", "--user-name", "intruder", check=False)
    assert denied.returncode != 0 and "AccessDenied" in denied.stderr

    summary = json.loads(aws(root, "iam", "get-account-summary").stdout)["SummaryMap"]
    assert summary["Users"] == 1 and summary["AccessKeysPerUserQuota"] == 2

    # Cleanup as AWS demands: keys and policies before the user.
    conflict = aws(root, "iam", "delete-user", "--user-name", "dev", check=False)
    assert conflict.returncode != 0 and "DeleteConflict" in conflict.stderr
    aws(root, "iam", "delete-access-key", "--user-name", "dev", "--access-key-id", key["AccessKeyId"])
    aws(root, "iam", "delete-user-policy", "--user-name", "dev", "--policy-name", "read")
    aws(root, "iam", "delete-user", "--user-name", "dev")
    assert code(lambda: s3(dev).list_buckets()) == "InvalidAccessKeyId"
    gone = aws(root, "iam", "get-user", "--user-name", "dev", check=False)
    assert gone.returncode != 0 and "NoSuchEntity" in gone.stderr


def test_boto3_cross_account(env):
    """Cross account needs both sides: identity policy and bucket policy."""
    iam1 = boto3.client("iam", endpoint_url=ENDPOINT, aws_access_key_id=env["root1"][0],
                        aws_secret_access_key=env["root1"][1], region_name="us-east-1")
    iam2 = boto3.client("iam", endpoint_url=ENDPOINT, aws_access_key_id=env["root2"][0],
                        aws_secret_access_key=env["root2"][1], region_name="us-east-1")
    bucket = "iam-x-" + env["s"]
    s3(env["root1"]).create_bucket(Bucket=bucket)
    s3(env["root1"]).put_object(Bucket=bucket, Key="k", Body=b"K")

    iam2.create_user(UserName="visitor")
    k = iam2.create_access_key(UserName="visitor")["AccessKey"]
    visitor = (k["AccessKeyId"], k["SecretAccessKey"])
    iam2.put_user_policy(UserName="visitor", PolicyName="all", PolicyDocument=json.dumps(
        {"Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}]}))
    assert code(lambda: s3(visitor).get_object(Bucket=bucket, Key="k")) == "AccessDenied"
    # Account one's IAM is not account two's to read or change.
    with pytest.raises(botocore.exceptions.ClientError):
        iam2.list_user_policies(UserName="visitor-of-one")
    assert code(lambda: iam1.get_user(UserName="visitor")) == "NoSuchEntity"

    s3(env["root1"]).put_bucket_policy(Bucket=bucket, Policy=json.dumps({"Statement": [{
        "Effect": "Allow", "Principal": {"AWS": f"arn:aws:iam::{env['a2'][0]}:user/visitor"},
        "Action": "s3:GetObject", "Resource": f"arn:aws:s3:::{bucket}/*"}]}))
    assert s3(visitor).get_object(Bucket=bucket, Key="k")["Body"].read() == b"K"
    assert code(lambda: s3(visitor).put_object(Bucket=bucket, Key="k2", Body=b"x")) == "AccessDenied"
    iam2.delete_user_policy(UserName="visitor", PolicyName="all")
    assert code(lambda: s3(visitor).get_object(Bucket=bucket, Key="k")) == "AccessDenied"
