package s3api

import (
	"encoding/xml"
	"net"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"github.com/cairn-s3/cairn/internal/driver"
	"github.com/cairn-s3/cairn/internal/s3api/s3err"
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
	buckets, err := s.be.ListBuckets(r.Context(), rc.ident.User.ID)
	if err != nil {
		return err
	}
	sort.Slice(buckets, func(i, j int) bool { return buckets[i].Name < buckets[j].Name })
	res := listAllMyBucketsResult{
		Xmlns:   s3Namespace,
		Owner:   owner{ID: rc.ident.User.ID, DisplayName: displayName(rc.ident.User)},
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
	if !validBucketName(rc.bucket) {
		return s3err.New(s3err.ErrInvalidBucketName, "The specified bucket is not valid: %q.", rc.bucket)
	}
	shards := 0
	if v := r.Header.Get(BucketShardsHeader); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > MaxBucketIndexShards {
			return s3err.New(s3err.ErrInvalidArgument, "%s must be an integer between 1 and %d.", BucketShardsHeader, MaxBucketIndexShards)
		}
		shards = n
	}
	lock := strings.EqualFold(r.Header.Get("x-amz-bucket-object-lock-enabled"), "true")
	location, err := readLocation(r)
	if err != nil {
		return err
	}
	if lock {
		lb, err := s.objectLock()
		if err != nil {
			return err
		}
		err = lb.CreateBucketWith(r.Context(), rc.ident.User.ID, rc.bucket, location, shards, true)
		if err != nil {
			return err
		}
	} else if err := s.be.CreateBucket(r.Context(), rc.ident.User.ID, rc.bucket, location, shards); err != nil {
		return err
	}
	w.Header().Set("Location", "/"+rc.bucket)
	w.Header().Set("Content-Length", "0")
	w.WriteHeader(http.StatusOK)
	return nil
}

// readLocation parses the optional CreateBucketConfiguration body. Any
// constraint is accepted and recorded: clients configured for any region
// must be able to create buckets, as with RGW's default zonegroup.
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
	w.Header().Set("x-amz-bucket-region", s.bucketRegion(rc.binfo))
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

type accessControlPolicy struct {
	XMLName xml.Name `xml:"AccessControlPolicy"`
	Xmlns   string   `xml:"xmlns,attr"`
	Owner   owner    `xml:"Owner"`
	Grants  []grant  `xml:"AccessControlList>Grant"`
}

type grant struct {
	Grantee struct {
		XMLNS string `xml:"xmlns:xsi,attr"`
		Type  string `xml:"xsi:type,attr"`
		owner
	} `xml:"Grantee"`
	Permission string `xml:"Permission"`
}

// getACL answers GET ?acl on buckets and objects with the only policy
// Cairn has: the bucket owner has FULL_CONTROL.
func (s *Server) getACL(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
	if rc.key != "" {
		vid, err := s.versionParam(r.URL.Query())
		if err != nil {
			return err
		}
		info, err := s.headVersion(r.Context(), rc.bucket, rc.key, vid)
		if err != nil {
			markerHeaders(w.Header(), err)
			return err
		}
		setVersionHeader(w.Header(), info.VersionID)
	}
	o := owner{ID: rc.binfo.Owner, DisplayName: rc.binfo.Owner}
	var g grant
	g.Grantee.XMLNS = "http://www.w3.org/2001/XMLSchema-instance"
	g.Grantee.Type = "CanonicalUser"
	g.Grantee.owner = o
	g.Permission = "FULL_CONTROL"
	return writeXML(w, http.StatusOK, accessControlPolicy{Xmlns: s3Namespace, Owner: o, Grants: []grant{g}})
}
