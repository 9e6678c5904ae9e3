package s3api

import (
	"encoding/xml"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"github.com/cairn-s3/cairn/internal/authz"
	"github.com/cairn-s3/cairn/internal/driver"
	"github.com/cairn-s3/cairn/internal/s3err"
)

// BucketShardsHeader pre-shards a new bucket's index: CreateBucket with
// "x-cairn-bucket-index-shards: N" (1..MaxBucketIndexShards) creates the
// index with N shards instead of the configured default.
const BucketShardsHeader = "x-cairn-bucket-index-shards"

// MaxBucketIndexShards is RGW's upper bound on index shards.
const MaxBucketIndexShards = 65521

// validBucketName applies the S3 naming rules for new buckets.
func validBucketName(name string) bool {
	if len(name) < 3 || len(name) > 63 {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '.' || c == '-') {
			return false
		}
	}
	if !isAlnum(name[0]) || !isAlnum(name[len(name)-1]) {
		return false
	}
	if strings.Contains(name, "..") || strings.Contains(name, ".-") || strings.Contains(name, "-.") {
		return false
	}
	if net.ParseIP(name) != nil {
		return false
	}
	for _, p := range []string{"xn--", "sthree-", "amzn-s3-demo-"} {
		if strings.HasPrefix(name, p) {
			return false
		}
	}
	for _, sfx := range []string{"-s3alias", "--ol-s3", ".mrap", "--x-s3", "--table-s3"} {
		if strings.HasSuffix(name, sfx) {
			return false
		}
	}
	return true
}

func isAlnum(c byte) bool { return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' }

type listAllMyBucketsResult struct {
	XMLName           xml.Name    `xml:"ListAllMyBucketsResult"`
	Xmlns             string      `xml:"xmlns,attr"`
	Owner             owner       `xml:"Owner"`
	Buckets           []bucketXML `xml:"Buckets>Bucket"`
	ContinuationToken string      `xml:"ContinuationToken,omitempty"`
	Prefix            string      `xml:"Prefix,omitempty"`
}

type bucketXML struct {
	Name         string `xml:"Name"`
	CreationDate string `xml:"CreationDate"`
	BucketRegion string `xml:"BucketRegion,omitempty"`
}

// listBuckets lists the caller's own buckets (admins too: the admin API
// lists everything). Supports the newer prefix/max-buckets/continuation
// parameters; the token is the last bucket name returned.
func (s *Server) listBuckets(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
	q := r.URL.Query()
	max := 10000
	if v := q.Get("max-buckets"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 10000 {
			return s3err.New(s3err.ErrInvalidArgument, "max-buckets must be an integer between 1 and 10000.")
		}
		max = n
	}
	prefix, after := q.Get("prefix"), q.Get("continuation-token")
	var buckets []driver.BucketInfo
	if rc.ident.User.ID != "" { // anonymous: owns nothing, an empty list (RGW)
		var err error
		if buckets, err = s.be.ListBuckets(r.Context(), rc.ownerID()); err != nil {
			return err
		}
	}
	// Only the caller's tenant's buckets, by their S3 names.
	shown := buckets[:0]
	for _, b := range buckets {
		if t, name := driver.SplitBucket(b.Name); t == rc.tenant() {
			b.Name = name
			shown = append(shown, b)
		}
	}
	buckets = shown
	sort.Slice(buckets, func(i, j int) bool { return buckets[i].Name < buckets[j].Name })
	res := listAllMyBucketsResult{
		Xmlns:   s3Namespace,
		Owner:   owner{ID: rc.ownerID(), DisplayName: displayName(rc.ident.User)},
		Buckets: []bucketXML{},
		Prefix:  prefix,
	}
	for _, b := range buckets {
		if !strings.HasPrefix(b.Name, prefix) || b.Name <= after {
			continue
		}
		if len(res.Buckets) == max {
			res.ContinuationToken = res.Buckets[len(res.Buckets)-1].Name
			break
		}
		res.Buckets = append(res.Buckets, bucketXML{Name: b.Name, CreationDate: s3Time(b.Created)})
	}
	return writeXML(w, http.StatusOK, res)
}

func displayName(u driver.User) string {
	if u.DisplayName != "" {
		return u.DisplayName
	}
	return u.ID
}

type createBucketConfiguration struct {
	XMLName            xml.Name `xml:"CreateBucketConfiguration"`
	LocationConstraint string   `xml:"LocationConstraint"`
}

func (s *Server) createBucket(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
	if !validBucketName(rc.bucketName) {
		return s3err.New(s3err.ErrInvalidBucketName, "The specified bucket is not valid: %q.", rc.bucketName)
	}
	// A bucket is created in the caller's own tenant; only an admin may
	// name another (RGW).
	if t, _ := driver.SplitBucket(rc.bucket); t != rc.tenant() && !rc.ident.User.Admin {
		return s3err.New(s3err.ErrAccessDenied, "Buckets can only be created in your own tenant.")
	}
	shards := 0
	if v := r.Header.Get(BucketShardsHeader); v != "" {
		// Capped by the operator (max-bucket-index-shards): listing an
		// empty bucket reads every shard.
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > s.cfg.MaxRequestShards {
			return s3err.New(s3err.ErrInvalidArgument, "%s must be an integer between 1 and %d (the gateway's max-bucket-index-shards).", BucketShardsHeader, s.cfg.MaxRequestShards)
		}
		shards = n
	}
	lock := strings.EqualFold(r.Header.Get("X-Amz-Bucket-Object-Lock-Enabled"), "true")
	location, err := readLocation(r)
	if err != nil {
		return err
	}
	if err := s.checkLocation(location); err != nil {
		return err
	}
	access, err := s.createBucketAccess(r, rc.ownerID())
	if err != nil {
		return err
	}
	if lock {
		lb, err := s.objectLock()
		if err != nil {
			return err
		}
		err = lb.CreateBucketWith(r.Context(), rc.ownerID(), rc.bucket, location, shards, true)
		if errors.Is(err, driver.ErrBucketOwnedByYou) {
			return s.recreateBucket(w, r, rc, location, lock, access)
		}
		if err != nil {
			return err
		}
	} else if err := s.be.CreateBucket(r.Context(), rc.ownerID(), rc.bucket, location, shards); err != nil {
		if errors.Is(err, driver.ErrBucketOwnedByYou) {
			return s.recreateBucket(w, r, rc, location, lock, access)
		}
		return err
	}
	if access != nil {
		// A second step: a crash between leaves the bucket private, never
		// more open than asked.
		err := s.be.UpdateBucketAccess(r.Context(), rc.bucket, func(_ driver.Instance, a *driver.BucketAccess) error {
			*a = *access
			return nil
		})
		if err != nil {
			return err
		}
	}
	w.Header().Set("Location", "/"+rc.rawBucket)
	writeEmptyOK(w, "")
	return nil
}

// recreateBucket answers CreateBucket of a bucket its caller owns. AWS
// answers 200 in us-east-1 (legacy compatibility) and
// BucketAlreadyOwnedByYou in every other region. RGW answers 200 too, but
// BucketAlreadyExists when the request asks for a bucket other than the one
// there: another location, object lock it lacks, another ACL or ownership.
// Nothing of the bucket changes. RGW's own default zonegroup, "default",
// answers as us-east-1 (what SDKs pointed at it sign for).
func (s *Server) recreateBucket(w http.ResponseWriter, r *http.Request, rc *reqCtx, location string, lock bool, access *driver.BucketAccess) error {
	if s.cfg.Region != "us-east-1" && s.cfg.Region != "default" {
		return s3err.New(s3err.ErrBucketAlreadyOwnedByYou, "")
	}
	auth, err := s.be.BucketAuth(r.Context(), rc.bucket)
	if err != nil {
		return err
	}
	region := func(loc string) string {
		loc, _, _ = strings.Cut(loc, ":")
		if loc == "" {
			return "us-east-1"
		}
		return loc
	}
	differs := region(location) != region(auth.Info.Location)
	if lock {
		lb, err := s.objectLock()
		if err != nil {
			return err
		}
		if _, err := lb.GetObjectLockConfiguration(r.Context(), rc.bucket); errors.Is(err, driver.ErrNoSuchLockConfig) {
			differs = true
		} else if err != nil {
			return err
		}
	}
	want := authz.ACL{}
	if access != nil && access.ACL != nil {
		want = *access.ACL
	} else {
		o := authz.Owner{ID: rc.ownerID()}
		want, _ = authz.CannedACL("private", o, o)
	}
	if access != nil && access.Ownership != "" && access.Ownership != auth.Ownership {
		differs = true
	}
	if differs || !sameGrants(want, auth.ACL) {
		return s3err.New(s3err.ErrBucketAlreadyExists, "")
	}
	w.Header().Set("Location", "/"+rc.rawBucket)
	writeEmptyOK(w, "")
	return nil
}

// sameGrants compares two ACLs' grants as sets, by grantee identity and
// permission (display names aside).
func sameGrants(a, b authz.ACL) bool {
	key := func(g authz.Grant) string {
		return fmt.Sprint(g.Grantee.Type, "|", g.Grantee.ID, "|", g.Grantee.Email, "|", g.Grantee.URI, "|", g.Permission)
	}
	set := map[string]int{}
	for _, g := range a.Grants {
		set[key(g)]++
	}
	for _, g := range b.Grants {
		set[key(g)]--
	}
	for _, n := range set {
		if n != 0 {
			return false
		}
	}
	return true
}

// checkLocation accepts the constraints that name this gateway: none,
// us-east-1 (what SDKs configured for it imply) and the configured region
// (RGW's zonegroup api_name), optionally with RGW's ":placement" suffix
// naming the only placement, default-placement. Anything else names a
// region this gateway does not serve: InvalidLocationConstraint.
func (s *Server) checkLocation(loc string) error {
	region, placement, hasPlacement := strings.Cut(loc, ":")
	if hasPlacement && placement != "default-placement" {
		return s3err.New(s3err.ErrInvalidLocationConstraint, "The placement target %q does not exist; only default-placement does.", placement)
	}
	if region == "" || region == "us-east-1" || region == s.cfg.Region {
		return nil
	}
	return s3err.New(s3err.ErrInvalidLocationConstraint, "The location constraint %q is not valid: this gateway serves region %q.", region, s.cfg.Region)
}

// readLocation parses the optional CreateBucketConfiguration body.
func readLocation(r *http.Request) (string, error) {
	data, err := readAllLimited(r.Body, maxSmallXML)
	if err != nil {
		return "", err
	}
	if len(strings.TrimSpace(string(data))) == 0 {
		return "", nil
	}
	var cfg createBucketConfiguration
	if err := decodeXML(data, &cfg); err != nil {
		return "", err
	}
	return strings.TrimSpace(cfg.LocationConstraint), nil
}

func (s *Server) headBucket(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
	// RGW's usage headers: the index shard headers' totals. RGW sums
	// every stored version (its index counts each instance, delete
	// markers too), which is also what quotas count.
	st, err := s.be.BucketStats(r.Context(), rc.bucket)
	if err != nil {
		return err
	}
	w.Header().Set("X-Amz-Bucket-Region", s.bucketRegion(rc.binfo))
	w.Header().Set("X-Rgw-Object-Count", strconv.FormatUint(st.NumVersions, 10))
	w.Header().Set("X-Rgw-Bytes-Used", strconv.FormatUint(st.VersionsSize, 10))
	s.quotaHeaders(r.Context(), w.Header(), rc)
	w.WriteHeader(http.StatusOK)
	return nil
}

func (s *Server) bucketRegion(b driver.BucketInfo) string {
	if b.Location != "" {
		return b.Location
	}
	return s.cfg.Region
}

func (s *Server) deleteBucket(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
	if err := s.be.DeleteBucket(r.Context(), rc.bucket); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

type locationConstraint struct {
	XMLName xml.Name `xml:"LocationConstraint"`
	Xmlns   string   `xml:"xmlns,attr"`
	Value   string   `xml:",chardata"`
}

// getBucketLocation returns the recorded constraint; empty means
// us-east-1 to every client.
func (s *Server) getBucketLocation(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
	loc := rc.binfo.Location
	if loc == "us-east-1" {
		loc = ""
	}
	return writeXML(w, http.StatusOK, locationConstraint{Xmlns: s3Namespace, Value: loc})
}
