// Package notify is the root of Cairn's bucket notifications. Its
// subpackages are storage independent, so the write path, the delivery
// manager and the admin API share one definition of each piece:
//
//   - event: the event record sent to endpoints (AWS-compatible JSON), event
//     type names and wildcard matching, the per-key sequencer.
//   - config: a bucket's NotificationConfiguration (S3 XML), its validation,
//     and filter matching (which configurations fire for an event).
//   - topic: SNS topic attributes, endpoint URLs, ARNs, the stored Topic and
//     the SNS query-protocol XML responses.
//   - push: the contract between delivery and endpoints (Message, Endpoint,
//     retryable vs permanent errors, in-flight bounds).
//   - endpoint: the factory that turns topic attributes into a connected
//     endpoint (http, kafka, amqp subpackages), sharing connections.
//
// Queues (internal/notify/queue) and delivery (internal/notify/delivery) are
// built on top of these. The formats are specified in
// docs/design/notifications-format.md.
package notify
