"""Server-side encryption with boto3 and the aws CLI against a running cairn
started with --kms-keys testkey-1=... and --crypt-require-tls=false (run by
tests/python_test.go TestPythonSSE; env CAIRN_ENDPOINT, CAIRN_ACCESS_KEY,
CAIRN_SECRET_KEY, CAIRN_DATA_DIR)."""
import base64
import hashlib
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
DATA_DIR = os.environ["CAIRN_DATA_DIR"]


def client():
    return boto3.client(
        "s3", endpoint_url=ENDPOINT, aws_access_key_id=AK, aws_secret_access_key=SK,
        region_name="us-east-1", config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}),
    )


def aws(*args, check=True):
    env = dict(os.environ, AWS_ACCESS_KEY_ID=AK, AWS_SECRET_ACCESS_KEY=SK, AWS_DEFAULT_REGION="us-east-1")
    r = subprocess.run(["aws", "--endpoint-url", ENDPOINT, *args], env=env, capture_output=True, text=True, timeout=300)
    if check and r.returncode != 0:
        raise AssertionError(f"aws {args}: {r.returncode}\n{r.stdout}\n{r.stderr}")
    return r


def err(fn, **kw):
    with pytest.raises(botocore.exceptions.ClientError) as e:
        fn(**kw)
    r = e.value.response
    return r["Error"]["Code"], r["ResponseMetadata"]["HTTPStatusCode"]


def in_data_dir(needle: bytes):
    hits = []
    for root, _, files in os.walk(DATA_DIR):
        for f in files:
            p = os.path.join(root, f)
            try:
                with open(p, "rb") as fh:
                    if needle in fh.read():
                        hits.append(p)
            except FileNotFoundError:
                pass  # compacted away meanwhile
    return hits


def marked(n, marker: bytes):
    b = bytearray(os.urandom(n))
    b[n // 2:n // 2 + len(marker)] = marker
    return bytes(b)


def ssec(key: bytes, prefix=""):
    return {
        prefix + "SSECustomerAlgorithm": "AES256",
        prefix + "SSECustomerKey": key,  # boto3 base64s it and adds the MD5
    }


def test_boto3_modes_ranges_copy_and_probe():
    s3 = client()
    b = "sse-" + uuid.uuid4().hex[:10]
    s3.create_bucket(Bucket=b)
    key = os.urandom(32)
    run = uuid.uuid4().hex
    modes = {
        "s3": {"ServerSideEncryption": "AES256"},
        "kms": {"ServerSideEncryption": "aws:kms", "SSEKMSKeyId": "testkey-1"},
        "c": ssec(key),
    }
    markers = []
    for name, args in modes.items():
        marker = f"PY-SSE-MARKER-{name}-{run}".encode()
        markers.append(marker)
        body = marked(300_000, marker)
        put = s3.put_object(Bucket=b, Key=name, Body=body, **args)
        if name == "c":
            assert put["SSECustomerAlgorithm"] == "AES256"
            assert put["SSECustomerKeyMD5"] == base64.b64encode(hashlib.md5(key).digest()).decode()
        else:
            assert put["ServerSideEncryption"] == args["ServerSideEncryption"]
        if name == "kms":
            assert put["SSEKMSKeyId"] == "testkey-1"
        read = ssec(key) if name == "c" else {}
        got = s3.get_object(Bucket=b, Key=name, **read)
        assert got["Body"].read() == body
        r = s3.get_object(Bucket=b, Key=name, Range="bytes=65535-131072", **read)
        assert r["Body"].read() == body[65535:131073]
        h = s3.head_object(Bucket=b, Key=name, **read)
        assert h["ContentLength"] == len(body)
    # SSE-C without key / with another key.
    assert err(s3.get_object, Bucket=b, Key="c") == ("InvalidRequest", 400)
    assert err(s3.get_object, Bucket=b, Key="c", **ssec(os.urandom(32)))[1] == 403
    assert err(s3.put_object, Bucket=b, Key="x", Body=b"x", ServerSideEncryption="bogus") == ("InvalidArgument", 400)
    # The probe, before a copy to clear puts one marker on disk on purpose.
    for m in markers:
        assert in_data_dir(m) == [], m
    assert in_data_dir(key) == []
    assert in_data_dir(base64.b64encode(key)) == []
    # Copy SSE-C -> SSE-S3 -> clear.
    s3.copy_object(Bucket=b, Key="c2s3", CopySource={"Bucket": b, "Key": "c"}, ServerSideEncryption="AES256",
                   **ssec(key, "CopySource"))
    s3.copy_object(Bucket=b, Key="s32clear", CopySource={"Bucket": b, "Key": "c2s3"})
    assert "ServerSideEncryption" not in s3.head_object(Bucket=b, Key="s32clear")
    assert s3.get_object(Bucket=b, Key="s32clear")["Body"].read() == s3.get_object(Bucket=b, Key="c", **ssec(key))["Body"].read()
    # Bucket default.
    s3.put_bucket_encryption(Bucket=b, ServerSideEncryptionConfiguration={"Rules": [
        {"ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}}]})
    assert s3.get_bucket_encryption(Bucket=b)["ServerSideEncryptionConfiguration"]["Rules"][0][
        "ApplyServerSideEncryptionByDefault"]["SSEAlgorithm"] == "AES256"
    assert s3.put_object(Bucket=b, Key="d", Body=b"d")["ServerSideEncryption"] == "AES256"
    s3.delete_bucket_encryption(Bucket=b)
    assert err(s3.get_bucket_encryption, Bucket=b)[1] == 404


def test_aws_cli_every_mode(tmp_path):
    b = "ssecli-" + uuid.uuid4().hex[:10]
    aws("s3", "mb", f"s3://{b}")
    run = uuid.uuid4().hex
    key = os.urandom(32)
    keyfile = tmp_path / "key.bin"
    keyfile.write_bytes(key)
    modes = {
        "s3": ["--sse", "AES256"],
        "kms": ["--sse", "aws:kms", "--sse-kms-key-id", "testkey-1"],
        "c": ["--sse-c", "AES256", "--sse-c-key", f"fileb://{keyfile}"],
    }
    markers = []
    for name, flags in modes.items():
        for size, label in ((200_000, "small"), (9 << 20, "multipart")):  # > 8 MiB: the CLI uploads in parts
            marker = f"CLI-SSE-MARKER-{name}-{label}-{run}".encode()
            markers.append(marker)
            src = tmp_path / f"{name}-{label}.bin"
            src.write_bytes(marked(size, marker))
            aws("s3", "cp", str(src), f"s3://{b}/{name}/{label}", *flags)
            out = tmp_path / f"{name}-{label}.out"
            get_flags = flags if name == "c" else []
            aws("s3", "cp", f"s3://{b}/{name}/{label}", str(out), *get_flags)
            assert out.read_bytes() == src.read_bytes(), (name, label)
            head_args = ["--sse-customer-algorithm", "AES256", "--sse-customer-key", f"fileb://{keyfile}"] if name == "c" else []
            head = json.loads(aws("s3api", "head-object", "--bucket", b, "--key", f"{name}/{label}", *head_args).stdout)
            if name == "s3":
                assert head["ServerSideEncryption"] == "AES256"
            elif name == "kms":
                assert head["ServerSideEncryption"] == "aws:kms" and head["SSEKMSKeyId"] == "testkey-1"
            else:
                assert head["SSECustomerAlgorithm"] == "AES256"
    # Without the key the CLI cannot read the SSE-C object.
    r = aws("s3", "cp", f"s3://{b}/c/small", str(tmp_path / "nokey"), check=False)
    assert r.returncode != 0
    for m in markers:
        assert in_data_dir(m) == [], m
