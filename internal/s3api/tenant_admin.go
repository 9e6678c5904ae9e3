package s3api

import (
	"net/http"
	"strings"

	"github.com/cairn-s3/cairn/internal/driver"
	"github.com/cairn-s3/cairn/internal/s3err"
)

// qualifyAdminTenant applies the admin API's tenant parameter (radosgw-admin
// --tenant) once for every admin route: "uid" becomes "<tenant>$<uid>",
// "bucket" "<tenant>/<bucket>" and "topic" "<tenant>:<topic>" (the
// forms the routes take), unless they name a tenant already. A bucket
// named "tenant:bucket" is rewritten to the internal form too.
func qualifyAdminTenant(r *http.Request) error {
	q := r.URL.Query()
	tenant := q.Get("tenant")
	if tenant != "" && !driver.ValidTenant(tenant) {
		return s3err.New(s3err.ErrInvalidArgument, "Invalid tenant %q.", tenant)
	}
	changed := false
	set := func(k, v string) {
		if q.Get(k) != v {
			q.Set(k, v)
			changed = true
		}
	}
	if uid := q.Get("uid"); uid != "" && tenant != "" {
		t, bare := driver.SplitUserID(uid)
		if uid != bare && t != tenant {
			return s3err.New(s3err.ErrInvalidArgument, "uid %q names another tenant than %q.", uid, tenant)
		}
		set("uid", driver.TenantUserID(tenant, bare))
	}
	if b := q.Get("bucket"); b != "" {
		name, ok := driver.ParseBucketRef(b, tenant)
		if !ok {
			return s3err.New(s3err.ErrInvalidBucketName, "The specified bucket is not valid: %q.", b)
		}
		if t, _ := driver.SplitBucket(name); tenant != "" && t != tenant {
			return s3err.New(s3err.ErrInvalidArgument, "bucket %q names another tenant than %q.", b, tenant)
		}
		set("bucket", name)
	}
	if tp := q.Get("topic"); tp != "" && tenant != "" && !strings.Contains(tp, ":") {
		set("topic", tenant+":"+tp)
	}
	if changed {
		r.URL.RawQuery = q.Encode()
	}
	return nil
}
