// Package driver implements S3 semantics over the object layer: users and
// keys, bucket metadata, objects as a head plus tail stripes in
// default.rgw.buckets.data, multipart uploads, and the write path that ties
// object data, the bucket index and notification reservations together.
// It knows nothing about HTTP; s3api calls it through s3api.Backend.
package driver
