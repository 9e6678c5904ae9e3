package api

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/cairn-s3/cairn/internal/driver"
	"github.com/cairn-s3/cairn/internal/notify/config"
	"github.com/cairn-s3/cairn/internal/notify/service"
	"github.com/cairn-s3/cairn/internal/notify/topic"
	"github.com/cairn-s3/cairn/internal/s3err"
)

// The bucket handlers have s3api.BucketHandlerFunc's shape: the server has
// checked that the bucket exists and authorized the caller for the route's
// action (s3:GetBucketNotification; s3:PutBucketNotification to put or
// delete), by policy and ownership like any S3 route.

// PutBucketNotification is PUT /bucket?notification: replaces the
// configuration (AWS) or merges it by Id (RGW), per the service's
// ConfigMode. Unknown topics or bad filters: 400, nothing changes.
func (a *API) PutBucketNotification(w http.ResponseWriter, r *http.Request, b driver.BucketInfo) error {
	body, err := io.ReadAll(io.LimitReader(r.Body, config.MaxBodyLength+1))
	if err != nil {
		return err
	}
	c, err := config.Parse(body)
	if err != nil {
		return s3Error(err)
	}
	if err := a.mayPublish(r.Context(), c); err != nil {
		return err
	}
	if err := a.svc.PutBucketNotification(r.Context(), b, c); err != nil {
		return s3Error(err)
	}
	w.WriteHeader(http.StatusOK)
	return nil
}

// mayPublish refuses, with AccessDenied, a configuration naming a topic
// the caller does not own unless the topic's Policy allows sns:Publish to
// the caller (or RequirePublishPolicy is off and the topic has no Policy,
// or the caller is an admin). Another tenant's topic needs the Policy's
// grant in any case.
// Missing topics are left to the service, which names them.
func (a *API) mayPublish(ctx context.Context, c *config.Configuration) error {
	caller, _ := a.opts.Caller(ctx)
	for _, tc := range c.Topics {
		pa, err := topic.ParseARN(tc.TopicARN)
		if err != nil {
			continue // the service reports it
		}
		foreign := pa.Tenant != caller.tenant() && !caller.Admin
		t, err := a.svc.GetTopic(ctx, service.Ref(pa.Tenant, pa.Name))
		if errors.Is(err, service.ErrTopicNotFound) {
			if foreign { // another tenant's names are not told apart
				return s3err.New(s3err.ErrAccessDenied, "Notification %q: topic %s does not allow sns:Publish to you.", tc.ID, tc.TopicARN)
			}
			continue
		}
		if err != nil {
			return err
		}
		// Owners (and admins) may unless an explicit Deny binds them;
		// others need sns:Publish from the Policy. With the requirement
		// off only a topic without a Policy is open to all (RGW): one
		// with a Policy is decided by it, its Deny included.
		// Another tenant's topic always needs the grant.
		if t.Owner != caller.owner() && !caller.Admin && !a.opts.RequirePublishPolicy && t.Settings.Policy == "" && !foreign {
			continue
		}
		if t.MayAccess(caller.principal(), caller.global(), topic.ActionPublish) {
			continue
		}
		return s3err.New(s3err.ErrAccessDenied, "Notification %q: topic %s does not allow sns:Publish to you.", tc.ID, tc.TopicARN)
	}
	return nil
}

// GetBucketNotification is GET /bucket?notification, or with
// ?notification=ID just that configuration (RGW's extension).
func (a *API) GetBucketNotification(w http.ResponseWriter, r *http.Request, b driver.BucketInfo) error {
	c, err := a.svc.GetBucketNotification(r.Context(), b)
	if err != nil {
		return s3Error(err)
	}
	if id := r.URL.Query().Get("notification"); id != "" {
		tc := c.Get(id)
		if tc == nil {
			return s3err.New(s3err.ErrNoSuchConfiguration, "No notification %q on bucket %s.", id, b.Name)
		}
		c = &config.Configuration{Topics: []*config.TopicConfiguration{tc}}
	}
	body := c.XML()
	w.Header().Set("Content-Type", "application/xml")
	w.Header().Set("Content-Length", fmt.Sprint(len(body)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
	return nil
}

// DeleteBucketNotification is DELETE /bucket?notification (all) or
// ?notification=ID (one). The operation is RGW's extension (AWS deletes by
// putting an empty configuration) and answers as RGW does: 200 with no
// body. Deleting what does not exist succeeds, as S3 deletes do.
func (a *API) DeleteBucketNotification(w http.ResponseWriter, r *http.Request, b driver.BucketInfo) error {
	err := a.svc.DeleteBucketNotification(r.Context(), b, r.URL.Query().Get("notification"))
	if err != nil && s3Error(err) != nil {
		if e, ok := s3Error(err).(*s3err.Error); !ok || e.APIError != s3err.ErrNoSuchConfiguration {
			return s3Error(err)
		}
	}
	w.WriteHeader(http.StatusOK)
	return nil
}
