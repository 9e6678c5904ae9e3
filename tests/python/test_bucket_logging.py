"""Bucket logging with boto3 and the aws CLI against a running cairn (run by
tests/python_test.go). Records are parsed field by field as AWS documents
the server access log format."""
import json
import os
import re
import subprocess
import urllib.request
import uuid
from datetime import datetime, timedelta, timezone

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

FIELDS = ["bucket_owner", "bucket", "time", "remote_ip", "requester", "request_id", "operation", "key",
          "request_uri", "http_status", "error_code", "bytes_sent", "object_size", "total_time",
          "turn_around_time", "referer", "user_agent", "version_id", "host_id", "signature_version",
          "cipher_suite", "authentication_type", "host_header", "tls_version", "access_point_arn",
          "acl_required"]

# One record: plain fields, [time] and "quoted" fields, space separated.
TOKEN = re.compile(r'\[([^\]]*)\]|"((?:[^"\\]|\\.)*)"|(\S+)')


def parse(line):
    out = []
    for m in TOKEN.finditer(line):
        if m.group(1) is not None:
            out.append(m.group(1))
        elif m.group(2) is not None:
            out.append(re.sub(r'\\(.)', r'\1', m.group(2)))
        else:
            out.append(m.group(3))
    assert len(out) == len(FIELDS), (line, out)
    return dict(zip(FIELDS, out))


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


def policy(target, source):
    return json.dumps({"Version": "2012-10-17", "Statement": [{
        "Effect": "Allow", "Principal": {"Service": "logging.s3.amazonaws.com"},
        "Action": "s3:PutObject", "Resource": f"arn:aws:s3:::{target}/*",
        "Condition": {"ArnLike": {"aws:SourceArn": f"arn:aws:s3:::{source}"}}}]})


def records(s3, bucket):
    keys, out = [], []
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket):
        for o in page.get("Contents", []):
            keys.append(o["Key"])
            body = s3.get_object(Bucket=bucket, Key=o["Key"])["Body"].read().decode()
            out += [parse(l) for l in body.splitlines() if l]
    return keys, out


def test_bucket_logging_boto3():
    t0 = datetime.now(timezone.utc) - timedelta(seconds=2)
    s3 = client()
    src, logs = "lgp-" + uuid.uuid4().hex[:10], "lgl-" + uuid.uuid4().hex[:10]
    s3.create_bucket(Bucket=src)
    s3.create_bucket(Bucket=logs)
    status = {"LoggingEnabled": {"TargetBucket": logs, "TargetPrefix": "",
                                 "TargetObjectKeyFormat": {"PartitionedPrefix": {"PartitionDateSource": "DeliveryTime"}}}}
    with pytest.raises(botocore.exceptions.ClientError) as e:
        s3.put_bucket_logging(Bucket=src, BucketLoggingStatus=status)
    assert e.value.response["Error"]["Code"] == "AccessDenied"
    s3.put_bucket_policy(Bucket=logs, Policy=policy(logs, src))
    s3.put_bucket_logging(Bucket=src, BucketLoggingStatus=status)
    got = s3.get_bucket_logging(Bucket=src)["LoggingEnabled"]
    assert got["TargetBucket"] == logs
    assert got["TargetObjectKeyFormat"]["PartitionedPrefix"]["PartitionDateSource"] == "DeliveryTime"
    # The CLI sees the same configuration.
    cli = subprocess.run(["aws", "--endpoint-url", ENDPOINT, "--region", "us-east-1", "s3api", "get-bucket-logging",
                          "--bucket", src], capture_output=True, text=True,
                         env=dict(os.environ, AWS_ACCESS_KEY_ID=AK, AWS_SECRET_ACCESS_KEY=SK))
    assert cli.returncode == 0, cli.stderr
    assert json.loads(cli.stdout)["LoggingEnabled"]["TargetBucket"] == logs

    put = s3.put_object(Bucket=src, Key="obj", Body=b"x" * 100)
    rid = put["ResponseMetadata"]["RequestId"]
    s3.get_object(Bucket=src, Key="obj", Range="bytes=0-9")["Body"].read()
    s3.copy_object(Bucket=src, Key="copy", CopySource={"Bucket": src, "Key": "obj"})
    up = s3.create_multipart_upload(Bucket=src, Key="mp")["UploadId"]
    part = s3.upload_part(Bucket=src, Key="mp", UploadId=up, PartNumber=1, Body=b"p" * 10)["ETag"]
    s3.complete_multipart_upload(Bucket=src, Key="mp", UploadId=up,
                                 MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": part}]})
    s3.get_object_acl(Bucket=src, Key="obj")
    s3.delete_object(Bucket=src, Key="copy")

    flushed = json.loads(signed("POST", f"/admin/bucket?logging&bucket={src}"))
    assert flushed["target_bucket"] == logs and len(flushed["flushed_objects"]) == 1
    keys, recs = records(s3, logs)
    assert keys == flushed["flushed_objects"]
    acct = recs[0]["bucket_owner"]
    assert re.fullmatch(rf"{re.escape(acct)}/default/{src}/\d{{4}}/\d{{2}}/\d{{2}}/\d{{4}}-\d{{2}}-\d{{2}}-\d{{2}}-\d{{2}}-\d{{2}}-[0-9A-F]{{16}}", keys[0]), keys[0]
    ops = {(r["operation"], r["key"]): r for r in recs}
    for want in [("REST.PUT.OBJECT", "obj"), ("REST.GET.OBJECT", "obj"), ("REST.COPY.OBJECT", "copy"),
                 ("REST.POST.UPLOADS", "mp"), ("REST.PUT.PART", "mp"), ("REST.POST.UPLOAD", "mp"),
                 ("REST.GET.ACL", "obj"), ("REST.DELETE.OBJECT", "copy")]:
        assert want in ops, (want, sorted(ops))
    for r in recs:
        t = datetime.strptime(r["time"], "%d/%b/%Y:%H:%M:%S %z")
        assert t0 <= t <= datetime.now(timezone.utc) + timedelta(seconds=1), r
        assert r["bucket"] == src and r["remote_ip"] == "127.0.0.1" and r["requester"] == acct
        assert r["signature_version"] == "SigV4" and r["authentication_type"] == "AuthHeader"
        assert r["host_header"] == ENDPOINT.split("//")[1] and r["host_id"] != "-"
        assert r["total_time"].isdigit() and r["turn_around_time"].isdigit()
        assert re.search(r"Boto3|botocore|aws-cli", r["user_agent"]), r["user_agent"]
        assert r["cipher_suite"] == "-" and r["tls_version"] == "-" and r["access_point_arn"] == "-"
        assert r["request_uri"].endswith(" HTTP/1.1")
    p = ops[("REST.PUT.OBJECT", "obj")]
    assert p["request_id"] == rid and p["http_status"] == "200" and p["error_code"] == "-"
    assert p["object_size"] == "100" and p["bytes_sent"] == "-" and p["request_uri"].startswith(f"PUT /{src}/obj")
    g = ops[("REST.GET.OBJECT", "obj")]
    assert g["http_status"] == "206" and g["bytes_sent"] == "10" and g["object_size"] == "100"
    assert ops[("REST.GET.ACL", "obj")]["acl_required"] == "Yes"
    assert ops[("REST.POST.UPLOAD", "mp")]["object_size"] == "10"

    s3.put_bucket_logging(Bucket=src, BucketLoggingStatus={})
    assert "LoggingEnabled" not in s3.get_bucket_logging(Bucket=src)
