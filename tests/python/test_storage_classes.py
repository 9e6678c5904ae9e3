"""Storage classes with boto3 and the aws CLI against a running cairn
started with --storage-classes STANDARD_IA,GLACIER (tests/python_test.go;
env as in test_s3_clients.py)."""
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


def err(fn, **kw):
    with pytest.raises(botocore.exceptions.ClientError) as e:
        fn(**kw)
    r = e.value.response
    return r["Error"]["Code"], r["ResponseMetadata"]["HTTPStatusCode"]


def test_put_head_list_copy_multipart():
    s3 = client()
    b = "sc-" + uuid.uuid4().hex[:12]
    s3.create_bucket(Bucket=b)
    s3.put_object(Bucket=b, Key="ia", Body=b"infrequent", StorageClass="STANDARD_IA")
    s3.put_object(Bucket=b, Key="std", Body=b"standard")
    h = s3.head_object(Bucket=b, Key="ia")
    assert h["StorageClass"] == "STANDARD_IA"
    assert "StorageClass" not in s3.head_object(Bucket=b, Key="std")  # AWS omits STANDARD
    g = s3.get_object(Bucket=b, Key="ia")
    assert g["StorageClass"] == "STANDARD_IA" and g["Body"].read() == b"infrequent"
    assert err(s3.put_object, Bucket=b, Key="x", Body=b"x", StorageClass="DEEP_ARCHIVE") == ("InvalidStorageClass", 400)
    listed = {o["Key"]: o["StorageClass"] for o in s3.list_objects(Bucket=b)["Contents"]}
    assert listed == {"ia": "STANDARD_IA", "std": "STANDARD"}
    listed = {o["Key"]: o["StorageClass"] for o in s3.list_objects_v2(Bucket=b)["Contents"]}
    assert listed == {"ia": "STANDARD_IA", "std": "STANDARD"}
    # Copy in place changes the class.
    s3.copy_object(Bucket=b, Key="std", CopySource={"Bucket": b, "Key": "std"}, StorageClass="GLACIER")
    assert s3.head_object(Bucket=b, Key="std")["StorageClass"] == "GLACIER"
    assert s3.get_object(Bucket=b, Key="std")["Body"].read() == b"standard"
    # Multipart.
    up = s3.create_multipart_upload(Bucket=b, Key="mp", StorageClass="GLACIER")["UploadId"]
    e1 = s3.upload_part(Bucket=b, Key="mp", UploadId=up, PartNumber=1, Body=b"a" * (5 << 20))["ETag"]
    e2 = s3.upload_part(Bucket=b, Key="mp", UploadId=up, PartNumber=2, Body=b"b")["ETag"]
    assert [u["StorageClass"] for u in s3.list_multipart_uploads(Bucket=b)["Uploads"]] == ["GLACIER"]
    assert s3.list_parts(Bucket=b, Key="mp", UploadId=up)["StorageClass"] == "GLACIER"
    s3.complete_multipart_upload(Bucket=b, Key="mp", UploadId=up, MultipartUpload={"Parts": [
        {"PartNumber": 1, "ETag": e1}, {"PartNumber": 2, "ETag": e2}]})
    assert s3.head_object(Bucket=b, Key="mp")["StorageClass"] == "GLACIER"
    attrs = s3.get_object_attributes(Bucket=b, Key="mp", ObjectAttributes=["StorageClass", "ObjectSize"])
    assert attrs["StorageClass"] == "GLACIER" and attrs["ObjectSize"] == (5 << 20) + 1
    assert err(s3.create_multipart_upload, Bucket=b, Key="bad", StorageClass="ONEZONE_IA") == ("InvalidStorageClass", 400)


def test_versions_and_lifecycle_rules():
    s3 = client()
    b = "sc-" + uuid.uuid4().hex[:12]
    s3.create_bucket(Bucket=b)
    s3.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Enabled"})
    s3.put_object(Bucket=b, Key="k", Body=b"1", StorageClass="GLACIER")
    s3.put_object(Bucket=b, Key="k", Body=b"2")
    vs = s3.list_object_versions(Bucket=b)["Versions"]
    assert sorted(v["StorageClass"] for v in vs) == ["GLACIER", "STANDARD"]
    rules = {"Rules": [{"ID": "t", "Status": "Enabled", "Filter": {"Prefix": "logs/"},
                        "Transitions": [{"Days": 30, "StorageClass": "STANDARD_IA"}, {"Days": 90, "StorageClass": "GLACIER"}],
                        "NoncurrentVersionTransitions": [{"NoncurrentDays": 7, "StorageClass": "GLACIER", "NewerNoncurrentVersions": 2}]}]}
    s3.put_bucket_lifecycle_configuration(Bucket=b, LifecycleConfiguration=rules)
    got = s3.get_bucket_lifecycle_configuration(Bucket=b)["Rules"][0]
    assert [(t["Days"], t["StorageClass"]) for t in got["Transitions"]] == [(30, "STANDARD_IA"), (90, "GLACIER")]
    assert got["NoncurrentVersionTransitions"][0]["StorageClass"] == "GLACIER"
    bad = {"Rules": [{"ID": "t", "Status": "Enabled", "Filter": {"Prefix": ""},
                      "Transitions": [{"Days": 1, "StorageClass": "DEEP_ARCHIVE"}]}]}
    assert err(s3.put_bucket_lifecycle_configuration, Bucket=b, LifecycleConfiguration=bad) == ("InvalidStorageClass", 400)


def test_aws_cli_storage_class(tmp_path):
    b = "sc-" + uuid.uuid4().hex[:12]
    env = dict(os.environ, AWS_ACCESS_KEY_ID=AK, AWS_SECRET_ACCESS_KEY=SK, AWS_DEFAULT_REGION="us-east-1")
    aws = ["aws", "--endpoint-url", ENDPOINT]
    subprocess.run(aws + ["s3api", "create-bucket", "--bucket", b], env=env, check=True, capture_output=True)
    f = tmp_path / "f"
    f.write_bytes(b"cli data")
    subprocess.run(aws + ["s3", "cp", str(f), f"s3://{b}/cli", "--storage-class", "STANDARD_IA"], env=env, check=True, capture_output=True)
    out = subprocess.run(aws + ["s3api", "head-object", "--bucket", b, "--key", "cli"], env=env, check=True, capture_output=True).stdout
    assert json.loads(out)["StorageClass"] == "STANDARD_IA"


def test_presigned_post_storage_class():
    from test_post_cors import multipart, send
    s3 = client()
    b = "sc-" + uuid.uuid4().hex[:12]
    s3.create_bucket(Bucket=b)
    for cls, want in (("GLACIER", 204), ("DEEP_ARCHIVE", 400)):
        p = s3.generate_presigned_post(b, "posted", Fields={"x-amz-storage-class": cls},
                                       Conditions=[{"x-amz-storage-class": cls}], ExpiresIn=600)
        body, ctype = multipart(p["fields"], "f.txt", b"posted data")
        status, _, data = send("POST", p["url"], body, {"Content-Type": ctype})
        assert status == want, data
        if want == 400:
            assert b"InvalidStorageClass" in data
    assert s3.head_object(Bucket=b, Key="posted")["StorageClass"] == "GLACIER"
