"""boto3 and aws CLI against a running cairn (CAIRN_ENDPOINT, admin keys in env).

Run by tests/python_test.go, which starts the gateway. boto3 >= 1.36 sends
x-amz-checksum-* headers and aws-chunked trailers by default; they are left on.
"""
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


def client(ak=AK, sk=SK):
    return boto3.client(
        "s3", endpoint_url=ENDPOINT, aws_access_key_id=ak, aws_secret_access_key=sk,
        region_name="us-east-1", config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}),
    )


def bucket_name():
    return "py-" + uuid.uuid4().hex[:12]


def code(exc):
    return exc.response["Error"]["Code"]


def test_put_get_checksums_and_errors():
    s3 = client()
    b = bucket_name()
    s3.create_bucket(Bucket=b)
    body = b"hello boto3" * 100
    r = s3.put_object(Bucket=b, Key="k1", Body=body, ChecksumAlgorithm="SHA256", Metadata={"a": "1"})
    assert r["ETag"].strip('"') == hashlib.md5(body).hexdigest()
    got = s3.get_object(Bucket=b, Key="k1", ChecksumMode="ENABLED")
    assert got["Body"].read() == body
    assert got["Metadata"] == {"a": "1"}
    assert "ChecksumSHA256" in got
    # default CRC behaviour (no explicit algorithm)
    s3.put_object(Bucket=b, Key="dir/k2", Body=b"x" * 70000)
    assert s3.head_object(Bucket=b, Key="dir/k2")["ContentLength"] == 70000
    with pytest.raises(botocore.exceptions.ClientError) as e:
        s3.get_object(Bucket=b, Key="missing")
    assert code(e.value) == "NoSuchKey"
    with pytest.raises(botocore.exceptions.ClientError) as e:
        s3.get_object(Bucket=b, Key="k1", Range="bytes=99999-")
    assert code(e.value) == "InvalidRange"
    with pytest.raises(botocore.exceptions.ClientError) as e:
        s3.delete_bucket(Bucket=b)
    assert code(e.value) == "BucketNotEmpty"
    lst = s3.list_objects(Bucket=b, Delimiter="/")
    assert [o["Key"] for o in lst["Contents"]] == ["k1"]
    assert [p["Prefix"] for p in lst["CommonPrefixes"]] == ["dir/"]
    s3.delete_objects(Bucket=b, Delete={"Objects": [{"Key": "k1"}, {"Key": "dir/k2"}]})
    s3.delete_bucket(Bucket=b)


def test_multipart_upload_fileobj(tmp_path):
    s3 = client()
    b = bucket_name()
    s3.create_bucket(Bucket=b)
    data = os.urandom(12 * 1024 * 1024 + 17)
    p = tmp_path / "big.bin"
    p.write_bytes(data)
    cfg = boto3.s3.transfer.TransferConfig(multipart_threshold=5 * 1024 * 1024, multipart_chunksize=5 * 1024 * 1024)
    s3.upload_file(str(p), b, "big.bin", Config=cfg)
    head = s3.head_object(Bucket=b, Key="big.bin")
    assert head["ContentLength"] == len(data)
    assert head["ETag"].strip('"').endswith("-3")
    out = tmp_path / "out.bin"
    s3.download_file(b, "big.bin", str(out))
    assert out.read_bytes() == data


def test_presigned_url_expires():
    import urllib.request
    s3 = client()
    b = bucket_name()
    s3.create_bucket(Bucket=b)
    s3.put_object(Bucket=b, Key="p", Body=b"presigned")
    url = s3.generate_presigned_url("get_object", Params={"Bucket": b, "Key": "p"}, ExpiresIn=60)
    assert urllib.request.urlopen(url).read() == b"presigned"


def test_presigned_put_with_content_type_sigv2():
    """boto3's default presigned PUT in us-east-1 is SigV2 with the signed
    Content-Type (and x-amz-*) in the query string; tampering gets 403."""
    import urllib.error
    import urllib.parse
    import urllib.request
    s3 = client()
    b = bucket_name()
    s3.create_bucket(Bucket=b)
    url = s3.generate_presigned_url(
        "put_object", ExpiresIn=60,
        Params={"Bucket": b, "Key": "up.png", "ContentType": "image/png", "Metadata": {"who": "browser"}})
    q = urllib.parse.parse_qs(urllib.parse.urlsplit(url).query)
    assert "Signature" in q and "AWSAccessKeyId" in q, url  # SigV2: what this test is about
    assert q["content-type"] == ["image/png"] and q["x-amz-meta-who"] == ["browser"], url

    def put(u, ctype):
        req = urllib.request.Request(u, data=b"\x89PNG", method="PUT", headers={"Content-Type": ctype})
        try:
            with urllib.request.urlopen(req) as r:
                return r.status, r.read()
        except urllib.error.HTTPError as e:
            return e.code, e.read()

    status, body = put(url, "image/png")
    assert status == 200, body
    head = s3.head_object(Bucket=b, Key="up.png")
    assert head["ContentType"] == "image/png" and head["Metadata"] == {"who": "browser"}
    # Another Content-Type than the signed one, a tampered query value or
    # signature: 403 SignatureDoesNotMatch, and nothing changes.
    for u, ctype in [
        (url, "text/html"),
        (url.replace("content-type=image%2Fpng", "content-type=text%2Fhtml"), "text/html"),
        (url.replace("x-amz-meta-who=browser", "x-amz-meta-who=mallory"), "image/png"),
        (url.replace("Signature=", "Signature=A"), "image/png"),
    ]:
        assert u != url or ctype != "image/png"
        status, body = put(u, ctype)
        assert status == 403 and b"<Code>SignatureDoesNotMatch</Code>" in body, (u, ctype, status, body)
    head = s3.head_object(Bucket=b, Key="up.png")
    assert head["ContentType"] == "image/png" and head["Metadata"] == {"who": "browser"}


def aws(*args, check=True):
    env = dict(os.environ, AWS_ACCESS_KEY_ID=AK, AWS_SECRET_ACCESS_KEY=SK, AWS_DEFAULT_REGION="us-east-1")
    r = subprocess.run(["aws", "--endpoint-url", ENDPOINT, *args], env=env, capture_output=True, text=True, timeout=120)
    if check and r.returncode != 0:
        raise AssertionError(f"aws {args}: {r.returncode}\n{r.stdout}\n{r.stderr}")
    return r


def test_aws_cli(tmp_path):
    b = bucket_name()
    aws("s3", "mb", f"s3://{b}")
    f = tmp_path / "f.txt"
    f.write_text("from the aws cli\n")
    aws("s3", "cp", str(f), f"s3://{b}/a/f.txt")
    ls = aws("s3", "ls", f"s3://{b}/a/").stdout
    assert "f.txt" in ls
    out = tmp_path / "back.txt"
    aws("s3", "cp", f"s3://{b}/a/f.txt", str(out))
    assert out.read_text() == "from the aws cli\n"
    big = tmp_path / "big.bin"
    big.write_bytes(os.urandom(9 * 1024 * 1024))
    aws("s3", "cp", str(big), f"s3://{b}/big.bin")  # multipart (8 MiB threshold)
    head = json.loads(aws("s3api", "head-object", "--bucket", b, "--key", "big.bin").stdout)
    assert head["ContentLength"] == 9 * 1024 * 1024
    r = aws("s3api", "get-object", "--bucket", b, "--key", "nope", str(tmp_path / "x"), check=False)
    assert r.returncode != 0 and "NoSuchKey" in r.stderr
    aws("s3", "rb", f"s3://{b}", "--force")
    r = aws("s3api", "head-bucket", "--bucket", b, check=False)
    assert r.returncode != 0


def _crc32_b64(data):
    import base64
    import zlib
    return base64.b64encode(zlib.crc32(data).to_bytes(4, "big")).decode()


def test_multipart_checksums():
    """Multipart checksums as boto3 sends them: the transfer manager's
    default (CRC32 parts, composite object), and an explicit FULL_OBJECT
    CRC32 declared on Complete, validated against the parts."""
    import base64
    import zlib
    s3 = client()
    b = bucket_name()
    s3.create_bucket(Bucket=b)
    part = 5 * 1024 * 1024
    data = os.urandom(2 * part + 1000)
    chunks = [data[i:i + part] for i in range(0, len(data), part)]

    # upload_fileobj with boto3's defaults
    import io
    cfg = boto3.s3.transfer.TransferConfig(multipart_threshold=part, multipart_chunksize=part)
    s3.upload_fileobj(io.BytesIO(data), b, "default", Config=cfg)
    head = s3.head_object(Bucket=b, Key="default", ChecksumMode="ENABLED")
    raw = b"".join(zlib.crc32(c).to_bytes(4, "big") for c in chunks)
    composite = base64.b64encode(zlib.crc32(raw).to_bytes(4, "big")).decode() + "-3"
    assert head.get("ChecksumCRC32") == composite, head
    assert head.get("ChecksumType") == "COMPOSITE"

    # explicit full-object CRC32
    up = s3.create_multipart_upload(Bucket=b, Key="full", ChecksumAlgorithm="CRC32", ChecksumType="FULL_OBJECT")
    parts = []
    for i, c in enumerate(chunks, 1):
        r = s3.upload_part(Bucket=b, Key="full", UploadId=up["UploadId"], PartNumber=i, Body=c, ChecksumAlgorithm="CRC32")
        assert r["ChecksumCRC32"] == _crc32_b64(c)
        parts.append({"PartNumber": i, "ETag": r["ETag"], "ChecksumCRC32": r["ChecksumCRC32"]})
    lp = s3.list_parts(Bucket=b, Key="full", UploadId=up["UploadId"])
    assert [p["ChecksumCRC32"] for p in lp["Parts"]] == [p["ChecksumCRC32"] for p in parts]
    with pytest.raises(botocore.exceptions.ClientError) as e:
        s3.complete_multipart_upload(Bucket=b, Key="full", UploadId=up["UploadId"], ChecksumCRC32=_crc32_b64(data[1:]),
                                     ChecksumType="FULL_OBJECT", MultipartUpload={"Parts": parts})
    assert code(e.value) == "BadDigest"
    done = s3.complete_multipart_upload(Bucket=b, Key="full", UploadId=up["UploadId"], ChecksumCRC32=_crc32_b64(data),
                                        ChecksumType="FULL_OBJECT", MultipartUpload={"Parts": parts})
    assert done["ChecksumCRC32"] == _crc32_b64(data)
    assert done["ChecksumType"] == "FULL_OBJECT"
    got = s3.get_object(Bucket=b, Key="full", ChecksumMode="ENABLED")
    assert got["Body"].read() == data  # botocore validates the full-object CRC32
    assert got["ChecksumCRC32"] == _crc32_b64(data)
