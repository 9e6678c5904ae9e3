// Package api holds the HTTP handlers of bucket notifications, with no
// routing of their own: the S3 server (internal/s3api) authenticates and
// routes to them.
//
//   - SNS query API (SetSNSHandler): form POST to "/" with Action =
//     CreateTopic | GetTopicAttributes | GetTopic | ListTopics |
//     SetTopicAttributes | DeleteTopic; SNS XML responses and errors.
//   - Bucket notification configuration (HandleBucketSubresource "notification"):
//     PUT, GET and DELETE /bucket?notification, plus RGW's GET and DELETE of
//     one configuration with ?notification=ID.
//   - Admin JSON (HandleAdmin "topic", "notification"), as cmd/cairn calls them:
//     GET /admin/topic?list[&marker&max-entries], ?get&topic=T, ?stats&topic=T,
//     ?dump&topic=T[&max-entries=N][&marker=M]; DELETE /admin/topic?topic=T;
//     GET /admin/notification?list&bucket=B, ?get&bucket=B&notification-id=ID;
//     DELETE /admin/notification?bucket=B[&notification-id=ID].
package api
