// Package topic holds what Cairn knows about an SNS topic independent of
// storage: the attribute set accepted by CreateTopic and SetTopicAttributes
// and its validation (Parse, Set), endpoint URLs (ParseEndpoint), topic ARNs
// (ARN, ParseARN), the stored Topic record with a stable JSON encoding, and
// the SNS query-protocol XML responses (sns.go) that boto3's sns client and
// `aws sns` parse.
package topic
