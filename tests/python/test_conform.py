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
