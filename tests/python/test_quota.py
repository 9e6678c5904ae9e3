"""Quotas and the usage log with boto3 against a running cairn (run by
tests/python_test.go; env as in test_s3_clients.py). The admin API is
called signed with botocore's SigV4, as any RGW admin-ops client does."""
import json
import os
import urllib.error
import urllib.request
import uuid
import xml.etree.ElementTree as ET

import boto3
import botocore
import pytest
from botocore.auth import S3SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.config import Config
from botocore.credentials import Credentials

ENDPOINT = os.environ["CAIRN_ENDPOINT"]
AK = os.environ["CAIRN_ACCESS_KEY"]
SK = os.environ["CAIRN_SECRET_KEY"]


def client():
    return boto3.client(
        "s3", endpoint_url=ENDPOINT, aws_access_key_id=AK, aws_secret_access_key=SK,
        region_name="us-east-1", config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}),
    )


def signed(method, path_query):
    req = AWSRequest(method=method, url=ENDPOINT + path_query, data=b"")
    S3SigV4Auth(Credentials(AK, SK), "s3", "us-east-1").add_auth(req)
    r = urllib.request.Request(req.url, method=method, headers=dict(req.headers.items()))
    with urllib.request.urlopen(r) as resp:
        return resp.read()


def err(fn, **kw):
    with pytest.raises(botocore.exceptions.ClientError) as e:
        fn(**kw)
    r = e.value.response
    return r["Error"]["Code"], r["ResponseMetadata"]["HTTPStatusCode"]


def test_bucket_quota_put_copy_multipart():
    s3 = client()
    b = "qt-" + uuid.uuid4().hex[:12]
    s3.create_bucket(Bucket=b)
    s3.put_object(Bucket=b, Key="a", Body=b"x" * 11)
    q = json.loads(signed("PUT", f"/admin/bucket?quota&bucket={b}&max-size=20&enabled=true"))
    assert q["enabled"] and q["max_size"] == 20 and q["max_objects"] == -1
    assert err(s3.put_object, Bucket=b, Key="big", Body=b"x" * 10) == ("QuotaExceeded", 403)
    assert err(s3.copy_object, Bucket=b, Key="c", CopySource={"Bucket": b, "Key": "a"}) == ("QuotaExceeded", 403)
    up = s3.create_multipart_upload(Bucket=b, Key="mp")["UploadId"]
    # The part alone would pass the quota: UploadPart is checked with its size.
    assert err(s3.upload_part, Bucket=b, Key="mp", UploadId=up, PartNumber=1, Body=b"p" * 10) == ("QuotaExceeded", 403)
    e = s3.upload_part(Bucket=b, Key="mp", UploadId=up, PartNumber=1, Body=b"p" * 9)["ETag"]
    s3.put_object(Bucket=b, Key="b", Body=b"y" * 5)  # 16 of 20 used
    assert err(s3.complete_multipart_upload, Bucket=b, Key="mp", UploadId=up,
               MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": e}]}) == ("QuotaExceeded", 403)
    keys = sorted(o["Key"] for o in s3.list_objects_v2(Bucket=b).get("Contents", []))
    assert keys == ["a", "b"]
    signed("PUT", f"/admin/bucket?quota&bucket={b}&max-size=100")
    s3.complete_multipart_upload(Bucket=b, Key="mp", UploadId=up, MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": e}]})
    h = s3.head_bucket(Bucket=b)["ResponseMetadata"]["HTTPHeaders"]
    assert h["x-rgw-quota-bucket-size"] == "100" and h["x-rgw-bytes-used"] == "25" and h["x-rgw-object-count"] == "3"


def test_get_usage_summary():
    s3 = client()
    b = "qu-" + uuid.uuid4().hex[:12]
    s3.create_bucket(Bucket=b)
    s3.put_object(Bucket=b, Key="k", Body=b"hello")
    doc = ET.fromstring(signed("GET", "/?usage"))
    cats = {}
    for user in doc.find("Entries").findall("User"):
        for e in user.find("Buckets").findall("Entry"):
            if e.findtext("Bucket") == b:
                for c in e.find("Categories").findall("Entry"):
                    cats[c.findtext("Category")] = int(c.findtext("Ops"))
    assert cats.get("put_obj") == 1 and cats.get("create_bucket") == 1
    assert doc.find("Summary/User/Total/Ops") is not None
