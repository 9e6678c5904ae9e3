"""Tagging, object lock and lifecycle configuration with boto3 and the aws CLI
against a running cairn (run by tests/python_test.go; env as in
test_s3_clients.py)."""
import datetime
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


def bucket_name():
    return "dm-" + uuid.uuid4().hex[:12]


def err(fn, **kw):
    with pytest.raises(botocore.exceptions.ClientError) as e:
        fn(**kw)
    r = e.value.response
    return r["Error"]["Code"], r["ResponseMetadata"]["HTTPStatusCode"]


def tags(ts):
    return {t["Key"]: t["Value"] for t in ts}


def test_object_tagging_versions_and_headers():
    s3 = client()
    b = bucket_name()
    s3.create_bucket(Bucket=b)
    s3.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Enabled"})
    v1 = s3.put_object(Bucket=b, Key="k", Body=b"one", Tagging="a=1&b=two%20words")["VersionId"]
    v2 = s3.put_object(Bucket=b, Key="k", Body=b"two")["VersionId"]
    assert tags(s3.get_object_tagging(Bucket=b, Key="k", VersionId=v1)["TagSet"]) == {"a": "1", "b": "two words"}
    assert s3.get_object_tagging(Bucket=b, Key="k")["TagSet"] == []
    assert s3.head_object(Bucket=b, Key="k", VersionId=v1)["ResponseMetadata"]["HTTPHeaders"]["x-amz-tagging-count"] == "2"
    # Put on the current version only; v1 keeps its tags.
    r = s3.put_object_tagging(Bucket=b, Key="k", Tagging={"TagSet": [{"Key": "c", "Value": "3"}]})
    assert r["VersionId"] == v2
    assert tags(s3.get_object_tagging(Bucket=b, Key="k")["TagSet"]) == {"c": "3"}
    assert tags(s3.get_object_tagging(Bucket=b, Key="k", VersionId=v1)["TagSet"]) == {"a": "1", "b": "two words"}
    got = s3.get_object(Bucket=b, Key="k")
    assert got["TagCount"] == 1 and got["Body"].read() == b"two"
    s3.delete_object_tagging(Bucket=b, Key="k", VersionId=v1)
    assert s3.get_object_tagging(Bucket=b, Key="k", VersionId=v1)["TagSet"] == []
    assert "x-amz-tagging-count" not in s3.head_object(Bucket=b, Key="k", VersionId=v1)["ResponseMetadata"]["HTTPHeaders"]
    # Limits: 11 tags, duplicate keys, long keys.
    eleven = [{"Key": "k%d" % i, "Value": "v"} for i in range(11)]
    assert err(s3.put_object_tagging, Bucket=b, Key="k", Tagging={"TagSet": eleven}) == ("BadRequest", 400)
    dup = [{"Key": "x", "Value": "1"}, {"Key": "x", "Value": "2"}]
    assert err(s3.put_object_tagging, Bucket=b, Key="k", Tagging={"TagSet": dup}) == ("InvalidTag", 400)
    assert err(s3.put_object_tagging, Bucket=b, Key="k", Tagging={"TagSet": [{"Key": "x" * 129, "Value": "1"}]}) == ("InvalidTag", 400)
    assert err(s3.put_object, Bucket=b, Key="k2", Body=b"", Tagging="&".join("t%d=v" % i for i in range(11))) == ("BadRequest", 400)
    assert err(s3.get_object_tagging, Bucket=b, Key="missing") == ("NoSuchKey", 404)
    # A delete marker by id: 405.
    dm = s3.delete_object(Bucket=b, Key="k")["VersionId"]
    assert err(s3.get_object_tagging, Bucket=b, Key="k", VersionId=dm)[1] == 405
    # Copy: COPY keeps the source's tags, REPLACE takes x-amz-tagging.
    s3.put_object(Bucket=b, Key="src", Body=b"s", Tagging="from=src")
    s3.copy_object(Bucket=b, Key="c1", CopySource={"Bucket": b, "Key": "src"})
    assert tags(s3.get_object_tagging(Bucket=b, Key="c1")["TagSet"]) == {"from": "src"}
    s3.copy_object(Bucket=b, Key="c2", CopySource={"Bucket": b, "Key": "src"}, TaggingDirective="REPLACE", Tagging="new=1")
    assert tags(s3.get_object_tagging(Bucket=b, Key="c2")["TagSet"]) == {"new": "1"}
    # Multipart: x-amz-tagging on CreateMultipartUpload.
    up = s3.create_multipart_upload(Bucket=b, Key="mp", Tagging="mp=yes")
    p = s3.upload_part(Bucket=b, Key="mp", UploadId=up["UploadId"], PartNumber=1, Body=b"x" * 10)
    s3.complete_multipart_upload(Bucket=b, Key="mp", UploadId=up["UploadId"],
                                 MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": p["ETag"]}]})
    assert tags(s3.get_object_tagging(Bucket=b, Key="mp")["TagSet"]) == {"mp": "yes"}


def test_bucket_tagging():
    s3 = client()
    b = bucket_name()
    s3.create_bucket(Bucket=b)
    assert err(s3.get_bucket_tagging, Bucket=b) == ("NoSuchTagSet", 404)
    s3.put_bucket_tagging(Bucket=b, Tagging={"TagSet": [{"Key": "team", "Value": "storage"}, {"Key": "env", "Value": "test"}]})
    assert tags(s3.get_bucket_tagging(Bucket=b)["TagSet"]) == {"team": "storage", "env": "test"}
    fifty_one = [{"Key": "k%d" % i, "Value": "v"} for i in range(51)]
    assert err(s3.put_bucket_tagging, Bucket=b, Tagging={"TagSet": fifty_one}) == ("InvalidTag", 400)
    assert tags(s3.get_bucket_tagging(Bucket=b)["TagSet"]) == {"team": "storage", "env": "test"}
    s3.delete_bucket_tagging(Bucket=b)
    assert err(s3.get_bucket_tagging, Bucket=b) == ("NoSuchTagSet", 404)


def future(days=1):
    return datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(days=days)


def test_object_lock_configuration_and_errors():
    s3 = client()
    plain = bucket_name()
    s3.create_bucket(Bucket=plain)
    s3.put_object(Bucket=plain, Key="k", Body=b"x")
    assert err(s3.get_object_lock_configuration, Bucket=plain) == ("ObjectLockConfigurationNotFoundError", 404)
    cfg = {"ObjectLockEnabled": "Enabled", "Rule": {"DefaultRetention": {"Mode": "GOVERNANCE", "Days": 1}}}
    assert err(s3.put_object_lock_configuration, Bucket=plain, ObjectLockConfiguration=cfg) == ("InvalidBucketState", 409)
    assert err(s3.put_object_retention, Bucket=plain, Key="k",
               Retention={"Mode": "GOVERNANCE", "RetainUntilDate": future()}) == ("InvalidRequest", 400)
    assert err(s3.put_object_legal_hold, Bucket=plain, Key="k", LegalHold={"Status": "ON"}) == ("InvalidRequest", 400)
    assert err(s3.put_object, Bucket=plain, Key="k2", Body=b"x", ObjectLockMode="GOVERNANCE",
               ObjectLockRetainUntilDate=future()) == ("InvalidRequest", 400)

    b = bucket_name()
    s3.create_bucket(Bucket=b, ObjectLockEnabledForBucket=True)
    assert s3.get_bucket_versioning(Bucket=b)["Status"] == "Enabled"
    assert err(s3.put_bucket_versioning, Bucket=b, VersioningConfiguration={"Status": "Suspended"}) == ("InvalidBucketState", 409)
    assert s3.get_object_lock_configuration(Bucket=b)["ObjectLockConfiguration"] == {"ObjectLockEnabled": "Enabled"}
    s3.put_object_lock_configuration(Bucket=b, ObjectLockConfiguration=cfg)
    assert s3.get_object_lock_configuration(Bucket=b)["ObjectLockConfiguration"] == cfg
    bad = {"ObjectLockEnabled": "Enabled", "Rule": {"DefaultRetention": {"Mode": "GOVERNANCE", "Days": 1, "Years": 1}}}
    assert err(s3.put_object_lock_configuration, Bucket=b, ObjectLockConfiguration=bad) == ("MalformedXML", 400)
    # Default retention applies to new versions.
    v = s3.put_object(Bucket=b, Key="d", Body=b"x")["VersionId"]
    ret = s3.get_object_retention(Bucket=b, Key="d", VersionId=v)["Retention"]
    assert ret["Mode"] == "GOVERNANCE"
    assert ret["RetainUntilDate"] > future(0.9)
    h = s3.head_object(Bucket=b, Key="d")
    assert h["ObjectLockMode"] == "GOVERNANCE"
    assert err(s3.get_object_legal_hold, Bucket=b, Key="d") == ("NoSuchObjectLockConfiguration", 404)


def test_object_lock_refusals_change_nothing():
    s3 = client()
    b = bucket_name()
    s3.create_bucket(Bucket=b, ObjectLockEnabledForBucket=True)
    vc = s3.put_object(Bucket=b, Key="c", Body=b"compliance", ObjectLockMode="COMPLIANCE",
                       ObjectLockRetainUntilDate=future())["VersionId"]
    vg = s3.put_object(Bucket=b, Key="g", Body=b"governance", ObjectLockMode="GOVERNANCE",
                       ObjectLockRetainUntilDate=future())["VersionId"]
    vh = s3.put_object(Bucket=b, Key="h", Body=b"held", ObjectLockLegalHoldStatus="ON")["VersionId"]

    def versions():
        r = s3.list_object_versions(Bucket=b)
        return sorted((v["Key"], v["VersionId"]) for v in r.get("Versions", []))

    before = versions()
    for key, vid in (("c", vc), ("g", vg), ("h", vh)):
        assert err(s3.delete_object, Bucket=b, Key=key, VersionId=vid) == ("AccessDenied", 403)
    # Even with bypass: compliance and legal hold stay.
    assert err(s3.delete_object, Bucket=b, Key="c", VersionId=vc, BypassGovernanceRetention=True) == ("AccessDenied", 403)
    assert err(s3.delete_object, Bucket=b, Key="h", VersionId=vh, BypassGovernanceRetention=True) == ("AccessDenied", 403)
    r = s3.delete_objects(Bucket=b, Delete={"Objects": [{"Key": "c", "VersionId": vc}, {"Key": "h", "VersionId": vh}]})
    assert sorted(e["Code"] for e in r["Errors"]) == ["AccessDenied", "AccessDenied"]
    assert "Deleted" not in r
    assert versions() == before
    # Compliance can only be extended; governance shortening needs bypass.
    assert err(s3.put_object_retention, Bucket=b, Key="c", VersionId=vc,
               Retention={"Mode": "GOVERNANCE", "RetainUntilDate": future(2)}) == ("AccessDenied", 403)
    s3.put_object_retention(Bucket=b, Key="c", VersionId=vc, Retention={"Mode": "COMPLIANCE", "RetainUntilDate": future(2)})
    assert err(s3.put_object_retention, Bucket=b, Key="g", VersionId=vg,
               Retention={"Mode": "GOVERNANCE", "RetainUntilDate": future(0.5)}) == ("AccessDenied", 403)
    # A delete without a version id only adds a marker: allowed.
    dm = s3.delete_object(Bucket=b, Key="c")
    assert dm["DeleteMarker"] is True
    assert s3.get_object(Bucket=b, Key="c", VersionId=vc)["Body"].read() == b"compliance"
    # Governance yields to the owner's bypass; legal hold off frees "h".
    s3.delete_object(Bucket=b, Key="g", VersionId=vg, BypassGovernanceRetention=True)
    assert err(s3.head_object, Bucket=b, Key="g", VersionId=vg)[1] == 404
    assert s3.get_object_legal_hold(Bucket=b, Key="h", VersionId=vh)["LegalHold"]["Status"] == "ON"
    s3.put_object_legal_hold(Bucket=b, Key="h", VersionId=vh, LegalHold={"Status": "OFF"})
    s3.delete_object(Bucket=b, Key="h", VersionId=vh)


def test_lifecycle_configuration_api():
    s3 = client()
    b = bucket_name()
    s3.create_bucket(Bucket=b)
    assert err(s3.get_bucket_lifecycle_configuration, Bucket=b) == ("NoSuchLifecycleConfiguration", 404)
    cfg = {"Rules": [
        {"ID": "logs", "Status": "Enabled", "Filter": {"Prefix": "logs/"}, "Expiration": {"Days": 7},
         "AbortIncompleteMultipartUpload": {"DaysAfterInitiation": 3}},
        {"ID": "tmp", "Status": "Enabled",
         "Filter": {"And": {"Prefix": "tmp/", "Tags": [{"Key": "t", "Value": "1"}], "ObjectSizeGreaterThan": 10}},
         "NoncurrentVersionExpiration": {"NoncurrentDays": 1, "NewerNoncurrentVersions": 2}},
    ]}
    s3.put_bucket_lifecycle_configuration(Bucket=b, LifecycleConfiguration=cfg)
    got = s3.get_bucket_lifecycle_configuration(Bucket=b)["Rules"]
    assert [r["ID"] for r in got] == ["logs", "tmp"]
    assert got[0]["Expiration"]["Days"] == 7
    assert got[1]["NoncurrentVersionExpiration"]["NewerNoncurrentVersions"] == 2
    dup = {"Rules": [{"ID": "x", "Status": "Enabled", "Filter": {"Prefix": ""}, "Expiration": {"Days": 1}}] * 2}
    assert err(s3.put_bucket_lifecycle_configuration, Bucket=b, LifecycleConfiguration=dup) == ("InvalidArgument", 400)
    zero = {"Rules": [{"ID": "z", "Status": "Enabled", "Filter": {"Prefix": ""}, "Expiration": {"Days": 0}}]}
    assert err(s3.put_bucket_lifecycle_configuration, Bucket=b, LifecycleConfiguration=zero) == ("InvalidArgument", 400)
    assert len(s3.get_bucket_lifecycle_configuration(Bucket=b)["Rules"]) == 2
    s3.delete_bucket_lifecycle(Bucket=b)
    assert err(s3.get_bucket_lifecycle_configuration, Bucket=b) == ("NoSuchLifecycleConfiguration", 404)


def aws(*args):
    env = dict(os.environ, AWS_ACCESS_KEY_ID=AK, AWS_SECRET_ACCESS_KEY=SK, AWS_DEFAULT_REGION="us-east-1")
    out = subprocess.run(["aws", "--endpoint-url", ENDPOINT, *args], env=env, capture_output=True, text=True)
    return out


def test_aws_cli_tagging_lock_lifecycle(tmp_path):
    b = bucket_name()
    assert aws("s3api", "create-bucket", "--bucket", b, "--object-lock-enabled-for-bucket").returncode == 0
    assert aws("s3api", "put-object", "--bucket", b, "--key", "k", "--tagging", "a=b").returncode == 0
    out = aws("s3api", "get-object-tagging", "--bucket", b, "--key", "k")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["TagSet"] == [{"Key": "a", "Value": "b"}]
    out = aws("s3api", "put-object-legal-hold", "--bucket", b, "--key", "k", "--legal-hold", "Status=ON")
    assert out.returncode == 0, out.stderr
    vid = json.loads(aws("s3api", "head-object", "--bucket", b, "--key", "k").stdout)["VersionId"]
    out = aws("s3api", "delete-object", "--bucket", b, "--key", "k", "--version-id", vid)
    assert out.returncode != 0 and "AccessDenied" in out.stderr
    lc = tmp_path / "lc.json"
    lc.write_text(json.dumps({"Rules": [{"ID": "r", "Status": "Enabled", "Filter": {"Prefix": "x/"},
                                         "Expiration": {"Days": 1}}]}))
    out = aws("s3api", "put-bucket-lifecycle-configuration", "--bucket", b, "--lifecycle-configuration", "file://" + str(lc))
    assert out.returncode == 0, out.stderr
    out = aws("s3api", "get-bucket-lifecycle-configuration", "--bucket", b)
    assert json.loads(out.stdout)["Rules"][0]["ID"] == "r"
