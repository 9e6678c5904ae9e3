package service

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/cairn-s3/cairn/internal/kms/secret"
	"github.com/cairn-s3/cairn/internal/notify/topic"
	"github.com/cairn-s3/cairn/internal/objstore"
)

// topicSecretPurpose binds sealed credentials to their topic's ARN
// (docs/format/kms.md).
const topicSecretPurpose = "topic-credentials"

// topicCredentials is what Topic.Sealed holds.
type topicCredentials struct {
	PushEndpoint string `json:"push_endpoint"`
	Password     string `json:"password"`
}

func hasCredentials(st *topic.Settings) bool {
	if st.Password != "" {
		return true
	}
	u, err := st.Endpoint()
	return err == nil && u != nil && u.HasSecret()
}

// sealTopic returns t as it is to be stored: with a Sealer and
// credentials, a copy whose credentials are sealed.
func (s *Service) sealTopic(ctx context.Context, t *topic.Topic) (*topic.Topic, error) {
	if !s.opts.Secrets.Enabled() || t.Sealed != nil || !hasCredentials(&t.Settings) {
		return t, nil
	}
	plain, err := json.Marshal(topicCredentials{PushEndpoint: t.Settings.PushEndpoint, Password: t.Settings.Password})
	if err != nil {
		return nil, err
	}
	defer clear(plain)
	box, err := s.opts.Secrets.Seal(ctx, topicSecretPurpose, t.ARN, plain)
	if err != nil {
		return nil, fmt.Errorf("topic %s: sealing its credentials: %w", t.Name, err)
	}
	c := *t
	c.Sealed = box
	c.Settings.Password = ""
	if u, err := t.Settings.Endpoint(); err == nil && u != nil {
		c.Settings.PushEndpoint = u.Redacted()
	} else {
		c.Settings.PushEndpoint = ""
	}
	return &c, nil
}

// openTopic restores sealed credentials in place.
func (s *Service) openTopic(ctx context.Context, t *topic.Topic) error {
	if t.Sealed == nil {
		return nil
	}
	plain, err := s.opts.Secrets.Open(ctx, topicSecretPurpose, t.ARN, t.Sealed)
	if err != nil {
		return fmt.Errorf("topic %s: credentials: %w", t.Name, err)
	}
	defer clear(plain)
	var c topicCredentials
	if err := json.Unmarshal(plain, &c); err != nil {
		return fmt.Errorf("topic %s: sealed credentials: %w", t.Name, err)
	}
	t.Settings.PushEndpoint, t.Settings.Password, t.Sealed = c.PushEndpoint, c.Password, nil
	return nil
}

// SealTopicSecrets walks every topic: with rewrap false it seals the
// credentials still stored in clear (run at start), with rewrap true it
// also re-seals sealed ones under the newest version of their KMS key,
// credentials unchanged (`cairn admin kms reseal`). A topic changed
// meanwhile is left as written. It returns how many topics it rewrote.
func (s *Service) SealTopicSecrets(ctx context.Context, rewrap bool) (int, error) {
	if !s.opts.Secrets.Enabled() {
		return 0, secret.ErrNoKMS
	}
	n, marker := 0, ""
	for {
		oids, more, err := s.topics.ListObjects(ctx, marker, 1000)
		if err != nil {
			return n, err
		}
		for _, oid := range oids {
			t, ver, err := s.readTopicSealed(ctx, oid)
			if errors.Is(err, ErrTopicNotFound) {
				continue
			}
			if err != nil {
				return n, err
			}
			switch {
			case t.Sealed == nil && hasCredentials(&t.Settings):
				err = s.writeTopic(ctx, t, ver)
			case t.Sealed != nil && rewrap:
				var box *secret.Box
				if box, err = s.opts.Secrets.Rewrap(ctx, topicSecretPurpose, t.ARN, t.Sealed); err == nil {
					t.Sealed = box
					err = s.writeTopicSealed(ctx, t, ver)
				}
			default:
				continue
			}
			if errors.Is(err, objstore.ErrCanceled) || errors.Is(err, objstore.ErrNotFound) {
				continue
			}
			if err != nil {
				return n, fmt.Errorf("topic %s: %w", oid, err)
			}
			n++
		}
		if !more || len(oids) == 0 {
			return n, nil
		}
		marker = oids[len(oids)-1]
	}
}
