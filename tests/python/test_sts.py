"""Roles and STS with the aws CLI (aws iam, aws sts) and boto3's IAM, STS,
S3 and SNS clients against a running cairn: a root makes a role with
`aws iam create-role`, assumes it with `aws sts assume-role` and boto3;
the session's credentials (with their token) work on S3 and SNS within
the role's policies and a session policy; forged tokens are refused;
another account needs both sides. Run by tests/python_test.go."""
import json
import os
import subprocess
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

from cairnadmin import account as _account, admin_call

ENDPOINT = os.environ["CAIRN_ENDPOINT"]
AK = os.environ["CAIRN_ACCESS_KEY"]
SK = os.environ["CAIRN_SECRET_KEY"]


def aws(creds, *args, check=True):
    env = dict(os.environ, AWS_ACCESS_KEY_ID=creds[0], AWS_SECRET_ACCESS_KEY=creds[1], AWS_DEFAULT_REGION="us-east-1")
    env.pop("AWS_PROFILE", None)
    env.pop("AWS_SESSION_TOKEN", None)
    if len(creds) > 2:
        env["AWS_SESSION_TOKEN"] = creds[2]
    r = subprocess.run(["aws", "--endpoint-url", ENDPOINT, "--output", "json", *args], env=env,
                       capture_output=True, text=True, timeout=120)
    if check and r.returncode != 0:
        raise AssertionError(f"aws {args}: {r.returncode}\n{r.stdout}\n{r.stderr}")
    return r


def client(svc, creds):
    kw = dict(endpoint_url=ENDPOINT, aws_access_key_id=creds[0], aws_secret_access_key=creds[1],
              region_name="us-east-1", config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}))
    if len(creds) > 2:
        kw["aws_session_token"] = creds[2]
    return boto3.client(svc, **kw)


def code(fn):
    try:
        fn()
    except botocore.exceptions.ClientError as e:
        return e.response["Error"]["Code"]
    return "OK"


def session(c):
    return (c["AccessKeyId"], c["SecretAccessKey"], c["SessionToken"])


def account(name):
    """(id, (root key, secret)): the credential pair as one value."""
    acct_id, ak, sk = _account(name)
    return acct_id, (ak, sk)


@pytest.fixture(scope="module")
def env():
    s = uuid.uuid4().hex[:8]
    a1, root1 = account("sts1-" + s)
    a2, root2 = account("sts2-" + s)
    return {"s": s, "a1": a1, "a2": a2, "root1": root1, "root2": root2}


def test_cli_assume_role(env, tmp_path):
    root, a1 = env["root1"], env["a1"]
    bucket = "sts-cli-" + env["s"]
    client("s3", root).create_bucket(Bucket=bucket)
    client("s3", root).put_object(Bucket=bucket, Key="in/a", Body=b"A")
    trust = tmp_path / "trust.json"
    trust.write_text(json.dumps({"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Principal": {"AWS": f"arn:aws:iam::{a1}:root"}, "Action": "sts:AssumeRole"}]}))
    role = json.loads(aws(root, "iam", "create-role", "--role-name", "cli-reader", "--assume-role-policy-document",
                          f"file://{trust}", "--max-session-duration", "7200").stdout)["Role"]
    assert role["Arn"] == f"arn:aws:iam::{a1}:role/cli-reader" and role["RoleId"].startswith("AROA")
    pol = tmp_path / "pol.json"
    pol.write_text(json.dumps({"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Action": ["s3:GetObject", "s3:ListBucket"], "Resource": [f"arn:aws:s3:::{bucket}", f"arn:aws:s3:::{bucket}/*"]},
        {"Effect": "Allow", "Action": "sns:*", "Resource": "*"}]}))
    aws(root, "iam", "put-role-policy", "--role-name", "cli-reader", "--policy-name", "read", "--policy-document", f"file://{pol}")
    roles = json.loads(aws(root, "iam", "list-roles").stdout)["Roles"]
    assert [r["RoleName"] for r in roles] == ["cli-reader"]

    out = json.loads(aws(root, "sts", "assume-role", "--role-arn", role["Arn"], "--role-session-name", "cli",
                         "--duration-seconds", "3600").stdout)
    assert out["AssumedRoleUser"]["Arn"] == f"arn:aws:sts::{a1}:assumed-role/cli-reader/cli"
    creds = session(out["Credentials"])
    assert creds[0].startswith("ASIA")
    who = json.loads(aws(creds, "sts", "get-caller-identity").stdout)
    assert who["Arn"] == f"arn:aws:sts::{a1}:assumed-role/cli-reader/cli" and who["Account"] == a1
    got = aws(creds, "s3", "cp", f"s3://{bucket}/in/a", "-")
    assert got.stdout == "A"
    denied = aws(creds, "s3", "cp", "-", f"s3://{bucket}/in/b", check=False)
    assert denied.returncode != 0 and "AccessDenied" in denied.stderr
    too_long = aws(root, "sts", "assume-role", "--role-arn", role["Arn"], "--role-session-name", "cli",
                   "--duration-seconds", "7201", check=False)
    assert too_long.returncode != 0 and "ValidationError" in too_long.stderr

    # The session's credentials work on SNS too (the role allows sns:*).
    topic = client("sns", creds).create_topic(Name="sts-topic-" + env["s"])["TopicArn"]
    assert topic.endswith("sts-topic-" + env["s"])


def test_boto3_session_policy_and_forgery(env):
    root, a1 = env["root1"], env["a1"]
    bucket = "sts-boto-" + env["s"]
    client("s3", root).create_bucket(Bucket=bucket)
    client("s3", root).put_object(Bucket=bucket, Key="a", Body=b"A")
    iam = client("iam", root)
    iam.create_role(RoleName="boto-rw", AssumeRolePolicyDocument=json.dumps({"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Principal": {"AWS": a1}, "Action": "sts:AssumeRole",
         "Condition": {"StringEquals": {"sts:ExternalId": "x-" + env["s"]}}}]}))
    iam.attach_role_policy(RoleName="boto-rw", PolicyArn="arn:aws:iam::aws:policy/AmazonS3FullAccess")
    assert iam.get_role(RoleName="boto-rw")["Role"]["AssumeRolePolicyDocument"]["Statement"][0]["Action"] == "sts:AssumeRole"
    sts = client("sts", root)
    arn = f"arn:aws:iam::{a1}:role/boto-rw"
    assert code(lambda: sts.assume_role(RoleArn=arn, RoleSessionName="b b")) == "ValidationError"  # not a session name
    assert code(lambda: sts.assume_role(RoleArn=arn, RoleSessionName="bb")) == "AccessDenied"  # no external id
    ro = session(sts.assume_role(RoleArn=arn, RoleSessionName="bb", ExternalId="x-" + env["s"], Policy=json.dumps(
        {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "s3:GetObject", "Resource": "*"}]}))["Credentials"])
    assert client("s3", ro).get_object(Bucket=bucket, Key="a")["Body"].read() == b"A"
    assert code(lambda: client("s3", ro).put_object(Bucket=bucket, Key="b", Body=b"B")) == "AccessDenied"
    # A managed session policy (PolicyArns) narrows the session the same way.
    mro = session(sts.assume_role(RoleArn=arn, RoleSessionName="bm", ExternalId="x-" + env["s"],
                                  PolicyArns=[{"arn": "arn:aws:iam::aws:policy/AmazonS3ReadOnlyAccess"}])["Credentials"])
    assert client("s3", mro).get_object(Bucket=bucket, Key="a")["Body"].read() == b"A"
    assert code(lambda: client("s3", mro).put_object(Bucket=bucket, Key="b", Body=b"B")) == "AccessDenied"
    # A PolicyArns member out of sequence is refused, not dropped (raw form).
    form = urllib.parse.urlencode({"Action": "AssumeRole", "Version": "2011-06-15", "RoleArn": arn, "RoleSessionName": "bx",
                                   "ExternalId": "x-" + env["s"],
                                   "PolicyArns.member.2.arn": "arn:aws:iam::aws:policy/AmazonS3ReadOnlyAccess"})
    req = AWSRequest(method="POST", url=ENDPOINT + "/", data=form,
                     headers={"Content-Type": "application/x-www-form-urlencoded"})
    SigV4Auth(Credentials(*root), "sts", "us-east-1").add_auth(req)
    prep = req.prepare()
    try:
        urllib.request.urlopen(urllib.request.Request(prep.url, data=form.encode(), method="POST", headers=dict(prep.headers)))
        raise AssertionError("PolicyArns.member.2 without member.1 was accepted")
    except urllib.error.HTTPError as e:
        assert e.code == 400 and b"ValidationError" in e.read()
    # Presigned GET with the token in the query.
    url = client("s3", ro).generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": "a"})
    assert "x-amz-security-token" in url.lower()  # boto3 presigns S3 with SigV2 by default
    with urllib.request.urlopen(url) as r:
        assert r.read() == b"A"

    forged = (ro[0], ro[1], ro[2][:-4] + ("AAAA" if not ro[2].endswith("AAAA") else "BBBB"))
    assert code(lambda: client("s3", forged).get_object(Bucket=bucket, Key="a")) == "InvalidToken"
    assert code(lambda: client("sts", forged).get_caller_identity()) == "InvalidClientTokenId"
    assert code(lambda: client("s3", ro[:2]).get_object(Bucket=bucket, Key="a")) == "InvalidAccessKeyId"

    # GetSessionToken: the root's own permissions, not IAM.
    st = session(sts.get_session_token(DurationSeconds=900)["Credentials"])
    assert client("s3", st).get_object(Bucket=bucket, Key="a")["Body"].read() == b"A"
    assert code(lambda: client("iam", st).list_roles()) == "AccessDenied"


def test_cross_account(env):
    a1, a2 = env["a1"], env["a2"]
    bucket = "sts-x-" + env["s"]
    client("s3", env["root2"]).create_bucket(Bucket=bucket)
    iam2 = client("iam", env["root2"])
    iam2.create_role(RoleName="partner", AssumeRolePolicyDocument=json.dumps({"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Principal": {"AWS": f"arn:aws:iam::{a1}:root"}, "Action": "sts:AssumeRole"}]}))
    iam2.attach_role_policy(RoleName="partner", PolicyArn="arn:aws:iam::aws:policy/AmazonS3FullAccess")
    arn = f"arn:aws:iam::{a2}:role/partner"
    # account one's user needs an identity policy; its root does not.
    iam1 = client("iam", env["root1"])
    iam1.create_user(UserName="carol")
    k = iam1.create_access_key(UserName="carol")["AccessKey"]
    carol = (k["AccessKeyId"], k["SecretAccessKey"])
    assert code(lambda: client("sts", carol).assume_role(RoleArn=arn, RoleSessionName="carol")) == "AccessDenied"
    iam1.put_user_policy(UserName="carol", PolicyName="assume", PolicyDocument=json.dumps({"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Action": "sts:AssumeRole", "Resource": arn}]}))
    c = session(client("sts", carol).assume_role(RoleArn=arn, RoleSessionName="carol")["Credentials"])
    client("s3", c).put_object(Bucket=bucket, Key="from-carol", Body=b"C")
    assert client("s3", env["root2"]).get_object(Bucket=bucket, Key="from-carol")["Body"].read() == b"C"
    # The other way round: account two has no role of account one to assume.
    assert code(lambda: client("sts", env["root2"]).assume_role(RoleArn=f"arn:aws:iam::{a1}:role/cli-reader", RoleSessionName="zz")) == "AccessDenied"
