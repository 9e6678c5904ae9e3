// Package config parses, validates, renders and evaluates a bucket's S3
// NotificationConfiguration: the XML body of PutBucketNotificationConfiguration
// (TopicConfiguration elements only, with RGW's S3Metadata and S3Tags
// filter extensions), its stored JSON form, and Match, which selects the
// configurations an event fires.
package config
