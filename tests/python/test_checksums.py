"""Checksums as AWS documents them ("Checking object integrity"), with boto3.

Objects uploaded without a checksum get S3's default full-object CRC64NVME;
a malformed checksum value is InvalidRequest, a wrong one BadDigest.
"""
import base64
import os
import struct
import uuid

import boto3
import botocore
import pytest
from botocore.config import Config

ENDPOINT = os.environ["CAIRN_ENDPOINT"]
AK = os.environ["CAIRN_ACCESS_KEY"]
SK = os.environ["CAIRN_SECRET_KEY"]


def client(calculation="when_supported"):
    return boto3.client(
        "s3", endpoint_url=ENDPOINT, aws_access_key_id=AK, aws_secret_access_key=SK,
        region_name="us-east-1",
        config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1},
                      request_checksum_calculation=calculation),
    )


def _crc64nvme_table():
    poly = 0x9A6C9329AC4BC9B5  # CRC-64/NVME, bit-reversed
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ poly if c & 1 else c >> 1
        table.append(c)
    return table


_TABLE = _crc64nvme_table()


def crc64nvme(data):
    c = 0xFFFFFFFFFFFFFFFF
    for b in data:
        c = _TABLE[(c ^ b) & 0xFF] ^ (c >> 8)
    return base64.b64encode(struct.pack(">Q", c ^ 0xFFFFFFFFFFFFFFFF)).decode()


def new_bucket(s3):
    b = "ck-" + uuid.uuid4().hex[:12]
    s3.create_bucket(Bucket=b)
    return b


def test_crc64nvme_reference():
    # The CRC-64/NVME check value (the CRC of "123456789").
    assert crc64nvme(b"123456789") == base64.b64encode(struct.pack(">Q", 0xAE8B14860A799888)).decode()


def test_checksum_default_put():
    s3 = client("when_required")  # boto3 sends no checksum
    b = new_bucket(s3)
    body = os.urandom(70000)
    want = crc64nvme(body)
    r = s3.put_object(Bucket=b, Key="k", Body=body)
    assert r["ChecksumCRC64NVME"] == want
    assert r["ChecksumType"] == "FULL_OBJECT"
    assert "ChecksumCRC32" not in r
    h = s3.head_object(Bucket=b, Key="k", ChecksumMode="ENABLED")
    assert h["ChecksumCRC64NVME"] == want and h["ChecksumType"] == "FULL_OBJECT"
    assert "ChecksumCRC64NVME" not in s3.head_object(Bucket=b, Key="k")
    # Default response validation (when_supported) reads it back.
    assert client().get_object(Bucket=b, Key="k", ChecksumMode="ENABLED")["Body"].read() == body
    a = s3.get_object_attributes(Bucket=b, Key="k", ObjectAttributes=["Checksum"])
    assert a["Checksum"] == {"ChecksumCRC64NVME": want, "ChecksumType": "FULL_OBJECT"}


def test_checksum_default_multipart():
    s3 = client("when_required")
    b = new_bucket(s3)
    data = os.urandom(5 * 1024 * 1024 + 300)
    up = s3.create_multipart_upload(Bucket=b, Key="k")["UploadId"]
    parts = []
    for n, chunk in enumerate([data[:5 * 1024 * 1024], data[5 * 1024 * 1024:]], 1):
        r = s3.upload_part(Bucket=b, Key="k", UploadId=up, PartNumber=n, Body=chunk)
        parts.append({"PartNumber": n, "ETag": r["ETag"]})
    r = s3.complete_multipart_upload(Bucket=b, Key="k", UploadId=up, MultipartUpload={"Parts": parts})
    want = crc64nvme(data)
    assert r["ChecksumCRC64NVME"] == want and r["ChecksumType"] == "FULL_OBJECT"
    h = s3.head_object(Bucket=b, Key="k", ChecksumMode="ENABLED")
    assert h["ChecksumCRC64NVME"] == want and h["ChecksumType"] == "FULL_OBJECT"


def test_checksum_declared_replaces_default():
    s3 = client()  # boto3's default: CRC32 on every upload
    b = new_bucket(s3)
    r = s3.put_object(Bucket=b, Key="k", Body=b"data")
    assert r["ChecksumCRC32"] == "rfPzYw==" and "ChecksumCRC64NVME" not in r


@pytest.mark.parametrize("value,err", [
    ("not base64!", "InvalidRequest"),   # malformed: not base64
    ("AAAA", "InvalidRequest"),          # base64 of the wrong length
    ("AAAAAA==", "BadDigest"),           # well formed, wrong value
])
def test_checksum_value_errors(value, err):
    s3 = client()
    b = new_bucket(s3)
    with pytest.raises(botocore.exceptions.ClientError) as e:
        s3.put_object(Bucket=b, Key="k", Body=b"data", ChecksumCRC32=value)
    assert e.value.response["Error"]["Code"] == err
    with pytest.raises(botocore.exceptions.ClientError):
        s3.head_object(Bucket=b, Key="k")
