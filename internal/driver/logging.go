package driver

import (
	"context"
	"errors"
)

// ErrNoSuchLoggingConfiguration is never returned to clients (GetBucketLogging
// answers an empty BucketLoggingStatus); callers use it to tell "off".
var ErrNoSuchLoggingConfiguration = errors.New("no logging configuration")

// Logging types (RGW's LoggingType extension).
const (
	LoggingStandard = "Standard" // AWS's server access log, delivered after the request
	LoggingJournal  = "Journal"  // RGW's journal: write ops only, durable before the response
)

// Log object key formats (TargetObjectKeyFormat).
const (
	KeyFormatSimple      = "Simple"
	KeyFormatPartitioned = "Partitioned"
)

// BucketLogging is a bucket's logging configuration as PutBucketLogging
// sent it, validated by internal/accesslog. It lives in the bucket
// instance (field "logging"), so the request path reads it from the
// instance cache.
type BucketLogging struct {
	TargetBucket string `json:"target_bucket"`
	TargetPrefix string `json:"target_prefix,omitempty"`
	// KeyFormat is KeyFormatSimple or KeyFormatPartitioned; DateSource
	// ("EventTime" or "DeliveryTime") applies to the partitioned one.
	KeyFormat  string `json:"key_format"`
	DateSource string `json:"date_source,omitempty"`
	// Type is LoggingStandard or LoggingJournal.
	Type string `json:"type"`
	// RollTime is RGW's ObjectRollTime in seconds: how long records
	// gather in one pending log object before it is delivered.
	RollTime int `json:"roll_time"`
	// BatchSize is RGW's RecordsBatchSize; 0: the gateway's default.
	BatchSize int `json:"batch_size,omitempty"`
	// Filter holds S3Key filter rules (prefix, suffix, regex) on the
	// object key, as RGW's Filter.
	Filter []LoggingFilterRule `json:"filter,omitempty"`
}

// LoggingFilterRule is one S3Key filter rule.
type LoggingFilterRule struct {
	Name  string `json:"name"` // prefix | suffix | regex
	Value string `json:"value"`
}

// GetBucketLogging returns the bucket's logging configuration (from the
// instance cache, up to its TTL old on other gateways), or
// ErrNoSuchLoggingConfiguration when logging is off.
func (d *Driver) GetBucketLogging(ctx context.Context, bucket string) (*BucketLogging, Instance, error) {
	if !ValidBucketName(bucket) {
		return nil, Instance{}, ErrNoSuchBucket
	}
	inst, err := d.Instance(ctx, bucket)
	if err != nil {
		return nil, Instance{}, err
	}
	if inst.Logging == nil {
		return nil, inst, ErrNoSuchLoggingConfiguration
	}
	return inst.Logging, inst, nil
}

// PutBucketLogging replaces the bucket's logging configuration; nil
// disables logging. check, if set, runs on the stored instance before
// the change and may refuse it.
func (d *Driver) PutBucketLogging(ctx context.Context, bucket string, cfg *BucketLogging, check func(Instance) error) error {
	return d.UpdateInstance(ctx, bucket, func(inst *Instance) error {
		if check != nil {
			if err := check(*inst); err != nil {
				return err
			}
		}
		inst.Logging = cfg
		return nil
	})
}
