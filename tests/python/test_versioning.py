"""boto3 and aws CLI versioning walkthrough against a running cairn.

Run by tests/python_test.go (TestPythonClients), which starts the gateway.
"""
import json
import os
import subprocess
import uuid

import boto3
import botocore
import pytest
from botocore.config import Config

ENDPOINT = os.environ["CAIRN_ENDPOINT"]
AK = os.environ["CAIRN_ACCESS_KEY"]
SK = os.environ["CAIRN_SECRET_KEY"]


def client():
    return boto3.client(
        "s3", endpoint_url=ENDPOINT, aws_access_key_id=AK, aws_secret_access_key=SK,
        region_name="us-east-1", config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}),
    )


def code(exc):
    return exc.response["Error"]["Code"]


def empty_bucket(s3, b):
    """What boto3 users (and Terraform's force_destroy) do before deleting a bucket."""
    for page in s3.get_paginator("list_object_versions").paginate(Bucket=b, MaxKeys=3):
        objs = [{"Key": v["Key"], "VersionId": v["VersionId"]} for v in page.get("Versions", []) + page.get("DeleteMarkers", [])]
        if objs:
            r = s3.delete_objects(Bucket=b, Delete={"Objects": objs})
            assert not r.get("Errors"), r
    s3.delete_bucket(Bucket=b)


def test_versioning_walkthrough():
    s3 = client()
    b = "pyv-" + uuid.uuid4().hex[:12]
    s3.create_bucket(Bucket=b)
    assert "Status" not in s3.get_bucket_versioning(Bucket=b)
    s3.put_object(Bucket=b, Key="old", Body=b"before versioning")
    r = s3.list_object_versions(Bucket=b)
    assert [(v["Key"], v["VersionId"], v["IsLatest"]) for v in r["Versions"]] == [("old", "null", True)]

    s3.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Enabled"})
    assert s3.get_bucket_versioning(Bucket=b)["Status"] == "Enabled"
    ids = [s3.put_object(Bucket=b, Key="doc", Body=b"v%d" % i)["VersionId"] for i in range(3)]
    assert len(set(ids)) == 3 and "null" not in ids
    assert sorted(ids, reverse=True) == ids[::-1] or sorted(ids) == ids[::-1]  # newest first
    assert s3.get_object(Bucket=b, Key="doc", VersionId=ids[0])["Body"].read() == b"v0"
    assert s3.head_object(Bucket=b, Key="doc")["VersionId"] == ids[2]

    d = s3.delete_object(Bucket=b, Key="doc")
    assert d["DeleteMarker"] is True
    with pytest.raises(botocore.exceptions.ClientError) as e:
        s3.get_object(Bucket=b, Key="doc")
    assert code(e.value) == "NoSuchKey"
    assert e.value.response["ResponseMetadata"]["HTTPHeaders"].get("x-amz-delete-marker") == "true"
    with pytest.raises(botocore.exceptions.ClientError) as e:
        s3.get_object(Bucket=b, Key="doc", VersionId=d["VersionId"])
    assert code(e.value) == "MethodNotAllowed"
    with pytest.raises(botocore.exceptions.ClientError) as e:
        s3.get_object(Bucket=b, Key="doc", VersionId="0" * 32)
    assert code(e.value) == "NoSuchVersion"

    # Plain listings show only current objects.
    assert [o["Key"] for o in s3.list_objects_v2(Bucket=b)["Contents"]] == ["old"]
    r = s3.list_object_versions(Bucket=b, Prefix="doc")
    assert [v["VersionId"] for v in r["Versions"]] == ids[::-1]
    assert [(m["VersionId"], m["IsLatest"]) for m in r["DeleteMarkers"]] == [(d["VersionId"], True)]

    # Restore by deleting the marker; copy an old version over the key.
    s3.delete_object(Bucket=b, Key="doc", VersionId=d["VersionId"])
    assert s3.get_object(Bucket=b, Key="doc")["Body"].read() == b"v2"
    c = s3.copy_object(Bucket=b, Key="doc", CopySource={"Bucket": b, "Key": "doc", "VersionId": ids[0]})
    assert c["CopySourceVersionId"] == ids[0]
    assert s3.get_object(Bucket=b, Key="doc")["Body"].read() == b"v0"

    # Malformed configuration changes nothing.
    with pytest.raises(botocore.exceptions.ClientError) as e:
        s3.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Off"})
    assert code(e.value) == "MalformedXML"
    s3.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Suspended"})
    # AWS answers a Suspended bucket's PUT without x-amz-version-id.
    assert "VersionId" not in s3.put_object(Bucket=b, Key="doc", Body=b"s")
    assert s3.head_object(Bucket=b, Key="doc")["VersionId"] == "null"

    # The aws CLI sees the same.
    env = dict(os.environ, AWS_ACCESS_KEY_ID=AK, AWS_SECRET_ACCESS_KEY=SK, AWS_DEFAULT_REGION="us-east-1")
    out = subprocess.run(["aws", "--endpoint-url", ENDPOINT, "s3api", "list-object-versions", "--bucket", b],
                         env=env, check=True, capture_output=True, text=True).stdout
    listed = json.loads(out)
    assert len(listed["Versions"]) == 6  # old(null), doc: copy, v2, v1, v0, s(null)

    empty_bucket(s3, b)
    with pytest.raises(botocore.exceptions.ClientError) as e:
        s3.head_bucket(Bucket=b)
    assert e.value.response["Error"]["Code"] in ("404", "NoSuchBucket")
