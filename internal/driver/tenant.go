package driver

import (
	"regexp"
	"strings"

	"github.com/cairn-s3/cairn/internal/authz"
)

// Tenants (RGW's multitenancy): a tenant is a namespace of users and
// buckets, named by no record of its own. A tenant's user has the id
// "<tenant>$<uid>" and its buckets the internal name "<tenant>/<bucket>"
// (RGW's bucket entry point name); the empty tenant, every user and
// bucket from before tenants, keeps bare ids and names. Neither '$' nor
// '/' may appear in a bare user id or bucket name, so the forms never
// collide (docs/format/tenants.md).

// tenantRE is what a tenant name may be: it appears in user ids, bucket
// entry points, ARNs ("arn:aws:s3::<tenant>:<bucket>") and queue names
// ("<tenant>:<topic>"), so none of '$', '/', ':' is allowed.
var tenantRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$`)

// ValidTenant reports whether t is a valid, non-empty tenant name. An IAM
// account id is not one: an account's topics live in a namespace named by
// its id (arn:aws:sns:<zonegroup>:<account>:<topic>, as RGW), which a
// tenant of that name would share.
func ValidTenant(t string) bool { return tenantRE.MatchString(t) && !authz.IsAccountID(t) }

// TenantUserID returns the id of user uid in tenant ("" = uid itself).
func TenantUserID(tenant, uid string) string {
	if tenant == "" {
		return uid
	}
	return tenant + "$" + uid
}

// SplitUserID splits a user id into its tenant ("" for none) and the
// user's id within it.
func SplitUserID(id string) (tenant, uid string) {
	if t, u, ok := strings.Cut(id, "$"); ok {
		return t, u
	}
	return "", id
}

// Tenant is the tenant of u ("" for none): a role session's is its
// account's.
func (u User) Tenant() string {
	if u.SessionTenant != "" {
		return u.SessionTenant
	}
	t, _ := SplitUserID(u.ID)
	return t
}

// TenantBucket returns the internal name of bucket in tenant: the name
// the driver, the index, lifecycle, resharding and notifications key it
// by.
func TenantBucket(tenant, bucket string) string {
	if tenant == "" {
		return bucket
	}
	return tenant + "/" + bucket
}

// SplitBucket splits an internal bucket name into its tenant ("" for
// none) and the bucket's S3 name.
func SplitBucket(name string) (tenant, bucket string) {
	if t, b, ok := strings.Cut(name, "/"); ok {
		return t, b
	}
	return "", name
}

// ParseBucketRef resolves a bucket as a request or an operator names it,
// "tenant:bucket" or "tenant/bucket" naming the tenant explicitly (RGW's
// path-style form and radosgw-admin's --bucket form), a bare name being
// in defTenant. ok is false for an invalid tenant.
func ParseBucketRef(ref, defTenant string) (name string, ok bool) {
	t, b, explicit := strings.Cut(ref, ":")
	if !explicit {
		t, b, explicit = strings.Cut(ref, "/")
	}
	if !explicit {
		return TenantBucket(defTenant, ref), true
	}
	if t == "" { // ":bucket" is the empty tenant, as in RGW
		return b, !strings.ContainsAny(b, ":/")
	}
	return TenantBucket(t, b), ValidTenant(t) && !strings.ContainsAny(b, ":/")
}
