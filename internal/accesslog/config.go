package accesslog

import (
	"context"
	"errors"
	"regexp"
	"strings"

	"github.com/cairn-s3/cairn/internal/authz"
	"github.com/cairn-s3/cairn/internal/driver"
	"github.com/cairn-s3/cairn/internal/s3err"
)

// ServicePrincipal is the service a target bucket's policy must allow to
// s3:PutObject (AWS's and RGW's check).
const ServicePrincipal = "logging.s3.amazonaws.com"

// MaxRollTime bounds ObjectRollTime (a day); rolled objects must come
// within a bounded time.
const MaxRollTime = 24 * 3600

// Validate checks a configuration's values and fills defaults.
func Validate(c *driver.BucketLogging) error {
	if c.TargetBucket == "" {
		return s3err.New(s3err.ErrMalformedXML, "LoggingEnabled requires TargetBucket.")
	}
	switch c.Type {
	case "":
		c.Type = driver.LoggingStandard
	case driver.LoggingStandard, driver.LoggingJournal:
	default:
		return s3err.New(s3err.ErrInvalidArgument, "LoggingType must be Standard or Journal.")
	}
	switch c.KeyFormat {
	case "":
		c.KeyFormat = driver.KeyFormatSimple
	case driver.KeyFormatSimple:
		if c.DateSource != "" {
			return s3err.New(s3err.ErrInvalidArgument, "PartitionDateSource applies to PartitionedPrefix only.")
		}
	case driver.KeyFormatPartitioned:
		switch c.DateSource {
		case "":
			c.DateSource = "DeliveryTime"
		case "EventTime", "DeliveryTime":
		default:
			return s3err.New(s3err.ErrInvalidArgument, "PartitionDateSource must be EventTime or DeliveryTime.")
		}
	}
	if c.RollTime < 0 || c.RollTime > MaxRollTime {
		return s3err.New(s3err.ErrInvalidArgument, "ObjectRollTime must be between 1 and %d seconds.", MaxRollTime)
	}
	if c.BatchSize < 0 {
		return s3err.New(s3err.ErrInvalidArgument, "RecordsBatchSize must not be negative.")
	}
	if len(c.Filter) > 0 && c.Type != driver.LoggingJournal {
		// RGW: key filters are a journal-mode feature.
		return s3err.New(s3err.ErrInvalidArgument, "Filter is supported with LoggingType Journal only.")
	}
	seen := map[string]bool{}
	for _, f := range c.Filter {
		switch f.Name {
		case "prefix", "suffix":
		case "regex":
			if _, err := regexp.Compile(f.Value); err != nil {
				return s3err.New(s3err.ErrInvalidArgument, "Invalid regex filter %q.", f.Value)
			}
		default:
			return s3err.New(s3err.ErrInvalidArgument, "Filter rule name must be prefix, suffix or regex.")
		}
		if seen[f.Name] {
			return s3err.New(s3err.ErrInvalidArgument, "Duplicate filter rule %q.", f.Name)
		}
		seen[f.Name] = true
	}
	return nil
}

func matchFilter(rules []driver.LoggingFilterRule, key string) bool {
	for _, f := range rules {
		switch f.Name {
		case "prefix":
			if !strings.HasPrefix(key, f.Value) {
				return false
			}
		case "suffix":
			if !strings.HasSuffix(key, f.Value) {
				return false
			}
		case "regex":
			re, err := regexp.Compile(f.Value)
			if err != nil || !re.MatchString(key) {
				return false
			}
		}
	}
	return true
}

// Put sets (cfg non-nil) or removes the logging configuration of source
// bucket, after the target checks RGW makes (docs.ceph.com "Bucket
// Logging"): the target exists, is not the source, has no logging of its
// own and no default encryption, and its policy allows the logging
// service principal s3:PutObject on the target prefix for this source
// (aws:SourceArn, aws:SourceAccount), even when one owner has both (RGW;
// AWS also accepts an ACL grant to its log delivery group, which Cairn
// does not have). TargetGrants are refused. Records pending under the
// old configuration are delivered where they were meant to go.
func (l *Logger) Put(ctx context.Context, bucket string, cfg *driver.BucketLogging, hasGrants bool) error {
	src, err := l.d.Instance(ctx, bucket)
	if err != nil {
		return err
	}
	if cfg != nil {
		if err := Validate(cfg); err != nil {
			return err
		}
		if err := l.checkTarget(ctx, src, cfg, hasGrants); err != nil {
			return err
		}
	}
	err = l.d.PutBucketLogging(ctx, bucket, cfg, func(inst driver.Instance) error {
		if cfg != nil && inst.ID != src.ID {
			return driver.ErrNoSuchBucket // recreated meanwhile
		}
		return nil
	})
	if err != nil {
		return err
	}
	// RGW flushes on a configuration change or disable.
	if _, ferr := l.Flush(ctx, bucket); ferr != nil {
		l.log.Warn("bucket logging: flush on configuration change failed", "bucket", bucket, "err", ferr)
	}
	return nil
}

func (l *Logger) checkTarget(ctx context.Context, src driver.Instance, cfg *driver.BucketLogging, hasGrants bool) error {
	bad := func(format string, args ...any) error {
		return s3err.New(s3err.ErrInvalidTargetBucketForLogging, format, args...)
	}
	if cfg.TargetBucket == src.Name {
		return bad("The target bucket for logging cannot be the source bucket.")
	}
	tgt, err := l.d.Instance(ctx, cfg.TargetBucket)
	if errors.Is(err, driver.ErrNoSuchBucket) {
		return bad("The target bucket for logging does not exist.")
	}
	if err != nil {
		return err
	}
	if tgt.Logging != nil {
		return bad("The target bucket for logging must not have logging enabled.")
	}
	if tgt.Encryption != nil {
		return bad("The target bucket for logging must not have default encryption.")
	}
	ta, err := l.d.BucketAuth(ctx, cfg.TargetBucket)
	if err != nil {
		return err
	}
	if hasGrants {
		if ta.Ownership.ACLsDisabled() {
			return s3err.New(s3err.ErrInvalidArgument, "Target grants are not supported for a target bucket with bucket owner enforced Object Ownership.")
		}
		return s3err.New(s3err.ErrNotImplemented, "TargetGrants are not implemented; the target bucket owner owns the log objects.")
	}
	if ta.Policy == nil {
		return s3err.New(s3err.ErrAccessDenied, "The target bucket's policy must allow %s to s3:PutObject.", ServicePrincipal)
	}
	probe := cfg.TargetPrefix + "2006-01-02-15-04-05-0000000000000000"
	if cfg.KeyFormat == driver.KeyFormatPartitioned {
		probe = cfg.TargetPrefix + l.ownerAccount(src.Owner) + "/" + l.opts.Region + "/" + src.Name + "/2006/01/02/2006-01-02-15-04-05-0000000000000000"
	}
	c := authz.Context{}
	c.Set("aws:SourceArn", "arn:aws:s3:::"+src.Name)
	c.Set("aws:SourceAccount", l.ownerAccount(src.Owner))
	c.Set("aws:SourceOwner", l.ownerAccount(src.Owner))
	req := authz.Request{
		Principal: authz.Principal{Service: ServicePrincipal},
		Action:    authz.S3PutObject,
		Resource:  authz.Resource{Bucket: cfg.TargetBucket, Key: probe},
		Context:   c,
	}
	if eff, _ := ta.Policy.Eval(&req); eff != authz.Allow {
		return s3err.New(s3err.ErrAccessDenied, "The target bucket's policy does not allow %s to s3:PutObject to %s for source bucket %s.",
			ServicePrincipal, cfg.TargetBucket+"/"+cfg.TargetPrefix, src.Name)
	}
	return nil
}
