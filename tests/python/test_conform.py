"""Conformance details checked with boto3 against a running cairn (issue
22): SigV2 as botocore signs it, request date errors, presigned URL expiry
bounds. Expected answers are AWS's (and RGW's where s3-tests holds clients
to them). Run by tests/python_test.go."""
import os
import urllib.error
import urllib.request
import uuid

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

ENDPOINT = os.environ["CAIRN_ENDPOINT"]
AK = os.environ["CAIRN_ACCESS_KEY"]
SK = os.environ["CAIRN_SECRET_KEY"]


def client(sigv="s3v4"):
    return boto3.client("s3", endpoint_url=ENDPOINT, aws_access_key_id=AK, aws_secret_access_key=SK,
                        region_name="us-east-1",
                        config=Config(signature_version=sigv, s3={"addressing_style": "path"}, retries={"max_attempts": 1}))


def error(e):
    return e.response["ResponseMetadata"]["HTTPStatusCode"], e.response["Error"]["Code"]


def test_sigv2_bucket_requests():
    # botocore (HmacV1Auth) signs a path-style bucket request to /b as the
    # resource /b/: both name the bucket.
    v2 = client("s3")
    b = "v2-" + uuid.uuid4().hex[:8]
    v2.create_bucket(Bucket=b)
    assert v2.get_bucket_acl(Bucket=b)["Owner"]["ID"]
    assert v2.head_bucket(Bucket=b)["ResponseMetadata"]["HTTPStatusCode"] == 200
    v2.put_object(Bucket=b, Key="k", Body=b"x")
    assert [o["Key"] for o in v2.list_objects(Bucket=b)["Contents"]] == ["k"]
    assert [o["Key"] for o in v2.list_objects_v2(Bucket=b, Prefix="k")["Contents"]] == ["k"]
    v2.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Enabled"})
    assert v2.get_bucket_versioning(Bucket=b)["Status"] == "Enabled"
    v2.delete_object(Bucket=b, Key="k")
    # Another secret still fails, on the bucket path too.
    bad = boto3.client("s3", endpoint_url=ENDPOINT, aws_access_key_id=AK, aws_secret_access_key="x" * 40,
                       region_name="us-east-1", config=Config(signature_version="s3", s3={"addressing_style": "path"}))
    with pytest.raises(ClientError) as e:
        bad.get_bucket_acl(Bucket=b)
    assert error(e.value) == (403, "SignatureDoesNotMatch")


@pytest.mark.parametrize("date,want", [
    ("Bad Date", "AccessDenied"),
    ("", "AccessDenied"),  # present but empty: no date, Date is not used
    ("Tue, 07 Jul 1950 21:53:04 GMT", "AccessDenied"),  # before the epoch
    ("Tue, 07 Jul 2010 21:53:04 GMT", "RequestTimeTooSkewed"),
    ("Tue, 07 Jul 2030 21:53:04 GMT", "RequestTimeTooSkewed"),
])
def test_sigv2_amz_date_errors(date, want):
    # s3-tests' auth_aws2 cases: every date error is 403, AccessDenied
    # unless the date parses and is merely skewed.
    v2 = client("s3")

    def add(request, **kwargs):
        request.headers["x-amz-date"] = date
    v2.meta.events.register("before-sign.s3.CreateBucket", add)
    with pytest.raises(ClientError) as e:
        v2.create_bucket(Bucket="v2date-" + uuid.uuid4().hex[:8])
    assert error(e.value) == (403, want)


@pytest.mark.parametrize("expires,want", [
    (604801, "AuthorizationQueryParametersError"),  # more than 7 days
    (-1, "AuthorizationQueryParametersError"),
])
def test_presign_expires_bounds(expires, want):
    c = client()
    b = "exp-" + uuid.uuid4().hex[:8]
    c.create_bucket(Bucket=b)
    url = c.generate_presigned_url("get_bucket_acl", Params={"Bucket": b}, ExpiresIn=3600)
    url = url.replace("X-Amz-Expires=3600", f"X-Amz-Expires={expires}")
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(url)
    assert e.value.code == 400
    assert f"<Code>{want}</Code>" in e.value.read().decode()


def post_form(bucket, doc, fields):
    """A SigV2 POST form (as s3-tests builds it) with the policy doc."""
    import base64
    import hashlib
    import hmac
    import json
    policy = base64.b64encode(json.dumps(doc).encode())
    sig = base64.b64encode(hmac.new(SK.encode(), policy, hashlib.sha1).digest()).decode()
    fields = dict(fields, AWSAccessKeyId=AK, signature=sig, policy=policy.decode())
    boundary = "----conform" + uuid.uuid4().hex
    body = b"".join(f'--{boundary}\r\nContent-Disposition: form-data; name="{k}"\r\n\r\n{v}\r\n'.encode()
                    for k, v in fields.items())
    body += (f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="f"\r\n\r\nbar\r\n'
             f"--{boundary}--\r\n").encode()
    req = urllib.request.Request(f"{ENDPOINT}/{bucket}", data=body, method="POST",
                                 headers={"Content-Type": "multipart/form-data; boundary=" + boundary})
    try:
        with urllib.request.urlopen(req) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


@pytest.mark.parametrize("expiration,conditions,want", [
    # Condition names, operators and form field names are case-insensitive
    # (s3-tests test_post_object_case_insensitive_condition_fields)...
    ("expiration", "conditions", 204),
    # ...the policy document's own keys are not (s3-tests
    # test_post_object_condition_is_case_sensitive, _expires_is_case_sensitive).
    ("expiration", "CONDITIONS", 400),
    ("EXPIRATION", "conditions", 400),
])
def test_post_policy_key_case(expiration, conditions, want):
    import datetime
    c = client()
    b = "postcase-" + uuid.uuid4().hex[:8]
    c.create_bucket(Bucket=b)
    exp = (datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(minutes=10)).strftime("%Y-%m-%dT%H:%M:%SZ")
    doc = {expiration: exp, conditions: [
        {"bUcKeT": b}, ["StArTs-WiTh", "$KeY", "foo"], {"AcL": "private"},
        ["StArTs-WiTh", "$CoNtEnT-TyPe", "text/plain"], ["content-length-range", 0, 1024]]}
    status, body = post_form(b, doc, {"kEy": "foo.txt", "aCl": "private", "Content-Type": "text/plain"})
    assert status == want, body
    if want == 204:
        assert c.get_object(Bucket=b, Key="foo.txt")["Body"].read() == b"bar"
    else:
        assert b"<Code>InvalidPolicyDocument</Code>" in body


@pytest.mark.parametrize("sigv", ["s3", "v2"])
def test_sns_sigv2_access_denied(sigv):
    # SNS takes SigV4 only; a SigV2 request (S3's header form, or the query
    # APIs' SignatureVersion=2) is 403 AccessDenied, the code RGW answers.
    sns = boto3.client("sns", endpoint_url=ENDPOINT, aws_access_key_id=AK, aws_secret_access_key=SK,
                       region_name="us-east-1", config=Config(signature_version=sigv, retries={"max_attempts": 1}))
    with pytest.raises(ClientError) as e:
        sns.create_topic(Name="v2topic-" + uuid.uuid4().hex[:8])
    assert error(e.value) == (403, "AccessDenied")
