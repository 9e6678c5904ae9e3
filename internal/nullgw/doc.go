// Package nullgw is the null gateway's backend: an s3api.Backend that keeps
// users, buckets and object metadata (size, ETag, metadata, checksums) in
// memory and discards object data. It exists to measure the gateway's HTTP,
// SigV4 and checksum path with storage taken out (`cairn serve --backend
// null`), so benchmarks can show how close storage brings us to that limit.
//
// PUT bodies are read to EOF through the same verifying readers the real
// backend sees (so signatures, Content-MD5 and x-amz-checksum-* are still
// checked) and hashed with MD5 for the ETag, as the driver does. GET returns
// zeros of the recorded size; HEAD, LIST, copy and multipart answer from the
// recorded metadata. Nothing survives a restart.
package nullgw
