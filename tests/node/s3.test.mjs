// The AWS SDK for JavaScript v3 with its default checksums (CRC32 on every
// upload, aws-chunked trailers where it streams) against a running cairn:
// CAIRN_ENDPOINT, CAIRN_ACCESS_KEY, CAIRN_SECRET_KEY. Run by tests/node_test.go.
import { test } from "node:test";
import assert from "node:assert/strict";
import { randomBytes, randomUUID } from "node:crypto";
import { Readable } from "node:stream";
import {
  S3Client, CreateBucketCommand, PutObjectCommand, GetObjectCommand, HeadObjectCommand,
  ListObjectsV2Command, DeleteObjectsCommand, CreateMultipartUploadCommand, UploadPartCommand,
  CompleteMultipartUploadCommand,
} from "@aws-sdk/client-s3";
import { Upload } from "@aws-sdk/lib-storage";

const s3 = new S3Client({
  endpoint: process.env.CAIRN_ENDPOINT,
  region: "us-east-1",
  forcePathStyle: true,
  credentials: { accessKeyId: process.env.CAIRN_ACCESS_KEY, secretAccessKey: process.env.CAIRN_SECRET_KEY },
  maxAttempts: 1,
});

// CRC-32 (IEEE), as the SDK computes it.
const table = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});
function crc32(buf) {
  let c = 0xffffffff;
  for (const b of buf) c = table[(c ^ b) & 0xff] ^ (c >>> 8);
  const out = Buffer.alloc(4);
  out.writeUInt32BE((c ^ 0xffffffff) >>> 0);
  return out;
}
const b64 = (b) => b.toString("base64");

async function newBucket() {
  const b = "node-" + randomUUID().slice(0, 12);
  await s3.send(new CreateBucketCommand({ Bucket: b }));
  return b;
}

test("put, get, list, delete with default checksums", async () => {
  const b = await newBucket();
  const body = Buffer.from("hello from the node sdk ".repeat(1000));
  const put = await s3.send(new PutObjectCommand({ Bucket: b, Key: "dir/a b+c.txt", Body: body, Metadata: { x: "1" } }));
  assert.equal(put.ChecksumCRC32, b64(crc32(body)));
  const got = await s3.send(new GetObjectCommand({ Bucket: b, Key: "dir/a b+c.txt", ChecksumMode: "ENABLED" }));
  assert.deepEqual(Buffer.from(await got.Body.transformToByteArray()), body);
  assert.equal(got.Metadata.x, "1");
  assert.equal(got.ChecksumCRC32, b64(crc32(body)));
  const ls = await s3.send(new ListObjectsV2Command({ Bucket: b, Prefix: "dir/", Delimiter: "/" }));
  assert.deepEqual(ls.Contents.map((o) => o.Key), ["dir/a b+c.txt"]);
  // DeleteObjects: the SDK requires and sends a request checksum.
  const del = await s3.send(new DeleteObjectsCommand({ Bucket: b, Delete: { Objects: [{ Key: "dir/a b+c.txt" }] } }));
  assert.equal(del.Deleted.length, 1);
});

test("streamed upload of unknown length (lib-storage, multipart with CRC32)", async () => {
  const b = await newBucket();
  const part = 5 * 1024 * 1024;
  const data = randomBytes(2 * part + 4321);
  const up = new Upload({ client: s3, params: { Bucket: b, Key: "big", Body: Readable.from([data.subarray(0, 7777), data.subarray(7777)]) }, partSize: part, queueSize: 2 });
  await up.done();
  const head = await s3.send(new HeadObjectCommand({ Bucket: b, Key: "big", ChecksumMode: "ENABLED" }));
  assert.equal(head.ContentLength, data.length);
  assert.match(head.ETag, /-3"$/);
  const got = await s3.send(new GetObjectCommand({ Bucket: b, Key: "big" }));
  assert.deepEqual(Buffer.from(await got.Body.transformToByteArray()), data);
});

test("multipart with a full-object CRC32 on Complete", async () => {
  const b = await newBucket();
  const part = 5 * 1024 * 1024;
  const data = randomBytes(part + 99);
  const cu = await s3.send(new CreateMultipartUploadCommand({ Bucket: b, Key: "full", ChecksumAlgorithm: "CRC32", ChecksumType: "FULL_OBJECT" }));
  const parts = [];
  for (const [i, chunk] of [data.subarray(0, part), data.subarray(part)].entries()) {
    const r = await s3.send(new UploadPartCommand({ Bucket: b, Key: "full", UploadId: cu.UploadId, PartNumber: i + 1, Body: chunk, ChecksumAlgorithm: "CRC32" }));
    parts.push({ PartNumber: i + 1, ETag: r.ETag, ChecksumCRC32: r.ChecksumCRC32 });
  }
  const done = await s3.send(new CompleteMultipartUploadCommand({
    Bucket: b, Key: "full", UploadId: cu.UploadId, ChecksumCRC32: b64(crc32(data)), ChecksumType: "FULL_OBJECT",
    MultipartUpload: { Parts: parts },
  }));
  assert.equal(done.ChecksumCRC32, b64(crc32(data)));
  assert.equal(done.ChecksumType, "FULL_OBJECT");
  const got = await s3.send(new GetObjectCommand({ Bucket: b, Key: "full", ChecksumMode: "ENABLED" }));
  assert.deepEqual(Buffer.from(await got.Body.transformToByteArray()), data);
  assert.equal(got.ChecksumCRC32, b64(crc32(data)));
});
