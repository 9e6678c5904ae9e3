package s3api

import (
	"net/http/httptest"
	"testing"
)

func TestResolveBucket(t *testing.T) {
	s := &Server{}
	for _, tc := range []struct {
		raw    string
		vhost  bool
		tenant string
		bucket string // internal name; "" = refused
		name   string
	}{
		{"bk1", false, "", "bk1", "bk1"},
		{"bk1", false, "t1", "t1/bk1", "bk1"},
		{"t2:bk1", false, "t1", "t2/bk1", "bk1"},
		{":bk1", false, "t1", "bk1", "bk1"},
		{"t2:bk1", false, "", "t2/bk1", "bk1"},
		{"bk1", true, "t1", "t1/bk1", "bk1"},
		{"t.2:bk1", false, "t1", "", "bk1"},
		{"t2:b:k", false, "t1", "", "b:k"},
	} {
		rc := &reqCtx{rawBucket: tc.raw, vhost: tc.vhost}
		err := s.resolveBucket(rc, tc.tenant)
		if (err != nil) != (tc.bucket == "") || (err == nil && (rc.bucket != tc.bucket || rc.bucketName != tc.name)) {
			t.Errorf("%q (vhost %v) in %q: %q %q %v", tc.raw, tc.vhost, tc.tenant, rc.bucket, rc.bucketName, err)
		}
	}
}

func TestQualifyAdminTenant(t *testing.T) {
	for _, tc := range []struct{ query, want string }{
		{"uid=alice", "uid=alice"},
		{"tenant=t1&uid=alice", "tenant=t1&uid=t1%24alice"},
		{"tenant=t1&uid=t1%24alice", "tenant=t1&uid=t1%24alice"},
		{"tenant=t1&uid=t2%24alice", ""},
		{"tenant=t.1&uid=alice", ""},
		{"bucket=t1%2Fbk", "bucket=t1%2Fbk"},
		{"bucket=t1:bk", "bucket=t1%2Fbk"},
		{"tenant=t1&bucket=bk", "bucket=t1%2Fbk&tenant=t1"},
		{"tenant=t1&bucket=t2/bk", ""},
		{"tenant=t1&topic=ev", "tenant=t1&topic=t1%3Aev"},
		{"topic=t1:ev", "topic=t1:ev"},
	} {
		r := httptest.NewRequest("GET", "/admin/user?"+tc.query, nil)
		err := qualifyAdminTenant(r)
		if (err != nil) != (tc.want == "") || (err == nil && r.URL.RawQuery != tc.want) {
			t.Errorf("%s: %q %v, want %q", tc.query, r.URL.RawQuery, err, tc.want)
		}
	}
}
