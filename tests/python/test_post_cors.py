"""Browser POST uploads (boto3 generate_presigned_post) and bucket CORS with boto3.

Run by tests/python_test.go with the other client tests.
"""
import os
import urllib.error
import urllib.request
import uuid

import boto3
import botocore
import pytest
from botocore.config import Config

ENDPOINT = os.environ["CAIRN_ENDPOINT"]
AK = os.environ["CAIRN_ACCESS_KEY"]
SK = os.environ["CAIRN_SECRET_KEY"]


def client(**cfg):
    return boto3.client(
        "s3", endpoint_url=ENDPOINT, aws_access_key_id=AK, aws_secret_access_key=SK,
        region_name="us-east-1", config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}, **cfg),
    )


def multipart(fields, filename, content):
    """A multipart/form-data body with the file last, as browsers send it."""
    boundary = "----cairn" + uuid.uuid4().hex
    out = []
    for k, v in fields.items():
        out.append(f'--{boundary}\r\nContent-Disposition: form-data; name="{k}"\r\n\r\n{v}\r\n'.encode())
    out.append(f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="{filename}"\r\n'
               f'Content-Type: application/octet-stream\r\n\r\n'.encode() + content + b"\r\n")
    out.append(f"--{boundary}--\r\n".encode())
    return b"".join(out), "multipart/form-data; boundary=" + boundary


def send(method, url, body=None, headers=None):
    req = urllib.request.Request(url, data=body, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(req) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


@pytest.mark.parametrize("sigv", ["s3v4", "s3"])
def test_presigned_post(sigv):
    s3 = client()
    b = "post-" + uuid.uuid4().hex[:10]
    s3.create_bucket(Bucket=b)
    post = client(signature_version=sigv).generate_presigned_post(
        b, "uploads/${filename}",
        Fields={"x-amz-meta-color": "red", "Content-Type": "text/plain", "success_action_status": "201"},
        Conditions=[{"x-amz-meta-color": "red"}, ["starts-with", "$Content-Type", "text/"],
                    {"success_action_status": "201"}, ["content-length-range", 1, 64]],
        ExpiresIn=600,
    )
    body, ctype = multipart(post["fields"], "notes.txt", b"posted by boto3")
    status, hdrs, data = send("POST", post["url"], body, {"Content-Type": ctype})
    assert status == 201, data
    assert b"<Key>uploads/notes.txt</Key>" in data
    head = s3.head_object(Bucket=b, Key="uploads/notes.txt")
    assert head["Metadata"] == {"color": "red"}
    assert head["ContentType"] == "text/plain"
    assert s3.get_object(Bucket=b, Key="uploads/notes.txt")["Body"].read() == b"posted by boto3"

    body, ctype = multipart(post["fields"], "big.txt", b"x" * 65)
    status, _, data = send("POST", post["url"], body, {"Content-Type": ctype})
    assert status == 400 and b"<Code>EntityTooLarge</Code>" in data
    with pytest.raises(botocore.exceptions.ClientError):
        s3.head_object(Bucket=b, Key="uploads/big.txt")

    body, ctype = multipart(post["fields"], "empty.txt", b"")
    status, _, data = send("POST", post["url"], body, {"Content-Type": ctype})
    assert status == 400 and b"<Code>EntityTooSmall</Code>" in data

    fields = dict(post["fields"], **{"x-amz-meta-color": "blue"})
    body, ctype = multipart(fields, "n.txt", b"x")
    status, _, data = send("POST", post["url"], body, {"Content-Type": ctype})
    assert status == 403 and b"Policy Condition failed" in data


def test_bucket_cors_boto3():
    s3 = client()
    b = "cors-" + uuid.uuid4().hex[:10]
    s3.create_bucket(Bucket=b)
    with pytest.raises(botocore.exceptions.ClientError) as e:
        s3.get_bucket_cors(Bucket=b)
    assert e.value.response["Error"]["Code"] == "NoSuchCORSConfiguration"
    rules = [{"AllowedOrigins": ["https://*.example.org"], "AllowedMethods": ["GET", "PUT"],
              "AllowedHeaders": ["*"], "ExposeHeaders": ["ETag"], "MaxAgeSeconds": 120}]
    s3.put_bucket_cors(Bucket=b, CORSConfiguration={"CORSRules": rules})
    got = s3.get_bucket_cors(Bucket=b)["CORSRules"]
    assert got[0]["AllowedOrigins"] == ["https://*.example.org"] and got[0]["MaxAgeSeconds"] == 120
    with pytest.raises(botocore.exceptions.ClientError) as e:
        s3.put_bucket_cors(Bucket=b, CORSConfiguration={"CORSRules": [{"AllowedOrigins": ["*"], "AllowedMethods": ["PATCH"]}]})
    assert e.value.response["Error"]["Code"] == "InvalidRequest"

    status, hdrs, _ = send("OPTIONS", f"{ENDPOINT}/{b}/k", headers={
        "Origin": "https://app.example.org", "Access-Control-Request-Method": "PUT",
        "Access-Control-Request-Headers": "content-type,x-amz-date"})
    assert status == 200
    assert hdrs["Access-Control-Allow-Origin"] == "https://app.example.org"
    assert hdrs["Access-Control-Max-Age"] == "120"
    status, _, data = send("OPTIONS", f"{ENDPOINT}/{b}/k", headers={
        "Origin": "https://evil.test", "Access-Control-Request-Method": "PUT"})
    assert status == 403 and b"This CORS request is not allowed" in data

    s3.delete_bucket_cors(Bucket=b)
    with pytest.raises(botocore.exceptions.ClientError):
        s3.get_bucket_cors(Bucket=b)


def _exists(s3, b, k):
    try:
        s3.head_object(Bucket=b, Key=k)
        return True
    except botocore.exceptions.ClientError as e:
        assert e.response["Error"]["Code"] in ("404", "NoSuchKey", "NotFound"), e.response
        return False


def test_post_acl_field():
    """The form's acl field is applied like x-amz-acl on a PUT: public-read
    makes the object readable anonymously; under BlockPublicAcls and
    BucketOwnerEnforced it is refused and nothing is stored."""
    s3 = client()
    b = "postacl-" + uuid.uuid4().hex[:10]
    s3.create_bucket(Bucket=b)

    def post(key, acl):
        p = client().generate_presigned_post(b, key, Fields={"acl": acl}, Conditions=[{"acl": acl}], ExpiresIn=600)
        body, ctype = multipart(p["fields"], "f.txt", b"public data")
        return send("POST", p["url"], body, {"Content-Type": ctype})

    status, _, data = post("open.txt", "public-read")
    assert status == 204, data
    status, _, data = send("GET", f"{ENDPOINT}/{b}/open.txt")
    assert status == 200 and data == b"public data"
    grants = s3.get_object_acl(Bucket=b, Key="open.txt")["Grants"]
    assert any(g["Grantee"].get("URI") == "http://acs.amazonaws.com/groups/global/AllUsers" and g["Permission"] == "READ"
               for g in grants), grants
    # private stays private.
    status, _, data = post("closed.txt", "private")
    assert status == 204, data
    status, _, _ = send("GET", f"{ENDPOINT}/{b}/closed.txt")
    assert status == 403

    s3.put_public_access_block(Bucket=b, PublicAccessBlockConfiguration={
        "BlockPublicAcls": True, "IgnorePublicAcls": False, "BlockPublicPolicy": False, "RestrictPublicBuckets": False})
    status, _, data = post("blocked.txt", "public-read")
    assert status == 403 and b"<Code>AccessDenied</Code>" in data, data
    assert not _exists(s3, b, "blocked.txt")

    s3.delete_public_access_block(Bucket=b)
    s3.put_bucket_ownership_controls(Bucket=b, OwnershipControls={"Rules": [{"ObjectOwnership": "BucketOwnerEnforced"}]})
    status, _, data = post("enforced.txt", "public-read")
    assert status == 400 and b"<Code>AccessControlListNotSupported</Code>" in data, data
    assert not _exists(s3, b, "enforced.txt")
