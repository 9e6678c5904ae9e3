// Package accesslog is bucket logging (PutBucketLogging): AWS's server
// access log records and RGW's journal records of a source bucket's
// requests, gathered in pending log objects in the log pool and delivered
// as rolled objects into the target bucket.
//
// The HTTP layer (internal/s3api) builds a Record when a request ends
// (standard mode) or just before a write's response is sent (journal
// mode) and hands it to a Logger; everything below — buffering, pending
// objects, rolling, delivery, the target checks of PutBucketLogging — is
// here.
//
// Storage (docs/format/accesslog.md): log pool, namespace
// "bucket-logging", one pending object per source bucket and gateway
// process, "<bucket id>/<boot id>.<seq>", records appended as omap entries,
// its state ("open" or "sealed") and where it goes in xattrs. Appends are
// guarded by state == open; rolling first seals the object (one guarded
// xattr write), so any gateway may roll any pending object at any time
// without losing a record another gateway is appending: a sealed append
// fails and the appender opens a new object.
package accesslog
