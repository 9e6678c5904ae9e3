package s3api

import (
	"errors"
	"testing"

	"github.com/cairn-s3/cairn/internal/s3err"
)

// Parsers of client XML must never panic, must reject with a client error
// (never InternalError), and must only accept documents that satisfy the
// invariants the handlers rely on.

func FuzzCompleteMultipartUpload(f *testing.F) {
	for _, s := range []string{
		`<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>"a"</ETag></Part></CompleteMultipartUpload>`,
		`<CompleteMultipartUpload xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Part><ETag>"a"</ETag><PartNumber>1</PartNumber><ChecksumCRC32>AAAAAA==</ChecksumCRC32></Part><Part><PartNumber>3</PartNumber><ETag>b</ETag></Part></CompleteMultipartUpload>`,
		`<CompleteMultipartUpload><Part><PartNumber>2</PartNumber></Part><Part><PartNumber>1</PartNumber></Part></CompleteMultipartUpload>`,
		`<CompleteMultipartUpload><Part><PartNumber>-1</PartNumber></Part></CompleteMultipartUpload>`,
		`<CompleteMultipartUpload/>`,
		`<?xml version="1.0"?><!DOCTYPE x [<!ENTITY a "b">]><CompleteMultipartUpload/>`,
		`<Delete/>`,
		``,
		`<CompleteMultipartUpload><Part><PartNumber>99999999999999999999</PartNumber></Part>`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		parts, err := parseCompleteParts(data)
		if err != nil {
			checkClientError(t, err)
			return
		}
		if len(parts) == 0 || len(parts) > 10000 {
			t.Fatalf("accepted %d parts", len(parts))
		}
		for i, p := range parts {
			if p.PartNumber < 1 || p.PartNumber > 10000 || (i > 0 && p.PartNumber <= parts[i-1].PartNumber) {
				t.Fatalf("accepted bad part list %+v", parts)
			}
		}
	})
}

func FuzzDelete(f *testing.F) {
	for _, s := range []string{
		`<Delete><Object><Key>a</Key></Object></Delete>`,
		`<Delete xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Quiet>true</Quiet><Object><Key>a b</Key><VersionId>null</VersionId></Object><Object><Key>&lt;x&gt;</Key></Object></Delete>`,
		`<Delete><Quiet>maybe</Quiet><Object><Key>a</Key></Object></Delete>`,
		`<Delete></Delete>`,
		`<Delete><Object>`,
		`<Other/>`,
		``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		req, err := parseDelete(data)
		if err != nil {
			checkClientError(t, err)
			return
		}
		if len(req.Objects) == 0 || len(req.Objects) > maxDeleteKeys {
			t.Fatalf("accepted %d objects", len(req.Objects))
		}
	})
}

func FuzzCreateBucketConfiguration(f *testing.F) {
	for _, s := range []string{
		`<CreateBucketConfiguration><LocationConstraint>eu-west-1</LocationConstraint></CreateBucketConfiguration>`,
		`<CreateBucketConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/"/>`,
		`<CreateBucketConfiguration><Location`,
		`<LocationConstraint>x</LocationConstraint>`,
		``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var cfg createBucketConfiguration
		if err := decodeXML(data, &cfg); err != nil {
			checkClientError(t, err)
		}
	})
}

func FuzzParseRange(f *testing.F) {
	for _, s := range []string{"bytes=0-1", "bytes=-5", "bytes=5-", "bytes=9-1", "bytes=0-1,2-3", "bytes=-0", "bytes= 1 - 2 "} {
		f.Add(s, int64(10))
	}
	f.Fuzz(func(t *testing.T, h string, size int64) {
		if size < 0 {
			size = -size
		}
		if size < 0 {
			return
		}
		rng, err := parseRange(h, size)
		if err != nil {
			if !errors.Is(err, errRangeNotSatisfiable) {
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
		if rng != nil && (rng.Start < 0 || rng.Length < 1 || rng.Start+rng.Length > size) {
			t.Fatalf("%q/%d: range %+v outside the object", h, size, *rng)
		}
	})
}

func checkClientError(t *testing.T, err error) {
	t.Helper()
	e := MapError(err)
	if e.HTTPStatus != 400 {
		t.Fatalf("parse error %v maps to %d %s, want a 400", err, e.HTTPStatus, e.Code)
	}
	var se *s3err.Error
	if !errors.As(err, &se) {
		t.Fatalf("parse error %v is not an *s3err.Error", err)
	}
}
