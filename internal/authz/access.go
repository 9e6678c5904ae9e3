package authz

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
)

// PublicAccessBlock is a bucket's PublicAccessBlockConfiguration.
type PublicAccessBlock struct {
	BlockPublicAcls       bool `xml:"BlockPublicAcls" json:"bpa,omitempty"`
	IgnorePublicAcls      bool `xml:"IgnorePublicAcls" json:"ipa,omitempty"`
	BlockPublicPolicy     bool `xml:"BlockPublicPolicy" json:"bpp,omitempty"`
	RestrictPublicBuckets bool `xml:"RestrictPublicBuckets" json:"rpb,omitempty"`
}

// ErrMalformedXML is a configuration body that does not parse.
var ErrMalformedXML = errors.New("malformed XML")

// ParsePublicAccessBlock parses a PublicAccessBlockConfiguration body.
func ParsePublicAccessBlock(body []byte) (PublicAccessBlock, error) {
	var x struct {
		XMLName xml.Name `xml:"PublicAccessBlockConfiguration"`
		PublicAccessBlock
	}
	if err := xml.Unmarshal(body, &x); err != nil {
		return PublicAccessBlock{}, fmt.Errorf("%w: %v", ErrMalformedXML, err)
	}
	return x.PublicAccessBlock, nil
}

// AppendXML renders the configuration.
func (p PublicAccessBlock) AppendXML(b []byte) []byte {
	x := struct {
		XMLName xml.Name `xml:"http://s3.amazonaws.com/doc/2006-03-01/ PublicAccessBlockConfiguration"`
		PublicAccessBlock
	}{PublicAccessBlock: p}
	out, _ := xml.Marshal(x)
	return append(append(b, xml.Header...), out...)
}

// Ownership is a bucket's object ownership setting.
type Ownership string

// Object ownership modes. The zero value behaves as ObjectWriter (S3's
// setting for buckets created before 2023, and RGW's only one).
const (
	OwnershipObjectWriter         Ownership = "ObjectWriter"
	OwnershipBucketOwnerPreferred Ownership = "BucketOwnerPreferred"
	OwnershipBucketOwnerEnforced  Ownership = "BucketOwnerEnforced"
)

// ParseOwnership validates an ObjectOwnership value.
func ParseOwnership(s string) (Ownership, bool) {
	switch o := Ownership(s); o {
	case OwnershipObjectWriter, OwnershipBucketOwnerPreferred, OwnershipBucketOwnerEnforced:
		return o, true
	}
	return "", false
}

// ACLsDisabled reports whether ACLs no longer affect access.
func (o Ownership) ACLsDisabled() bool { return o == OwnershipBucketOwnerEnforced }

// ParseOwnershipControls parses an OwnershipControls body: exactly one
// rule with a valid ObjectOwnership.
func ParseOwnershipControls(body []byte) (Ownership, error) {
	var x struct {
		XMLName xml.Name `xml:"OwnershipControls"`
		Rules   []struct {
			ObjectOwnership string `xml:"ObjectOwnership"`
		} `xml:"Rule"`
	}
	if err := xml.Unmarshal(body, &x); err != nil || len(x.Rules) != 1 {
		return "", ErrMalformedXML
	}
	o, ok := ParseOwnership(x.Rules[0].ObjectOwnership)
	if !ok {
		return "", ErrMalformedXML
	}
	return o, nil
}

// AppendXML renders an OwnershipControls document.
func (o Ownership) AppendXML(b []byte) []byte {
	var buf bytes.Buffer
	buf.WriteString(xml.Header)
	buf.WriteString(`<OwnershipControls xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Rule><ObjectOwnership>`)
	_ = xml.EscapeText(&buf, []byte(o))
	buf.WriteString(`</ObjectOwnership></Rule></OwnershipControls>`)
	return append(b, buf.Bytes()...)
}

// ObjectOwner returns who owns a newly written object: the bucket owner
// under BucketOwnerEnforced, or under BucketOwnerPreferred when the writer
// sent the bucket-owner-full-control canned ACL; the writer otherwise.
func ObjectOwner(o Ownership, bucketOwner, writer Owner, cannedACL string) Owner {
	switch {
	case o == OwnershipBucketOwnerEnforced:
		return bucketOwner
	case o == OwnershipBucketOwnerPreferred && cannedACL == "bucket-owner-full-control":
		return bucketOwner
	}
	return writer
}

// ACLAllowedWhenEnforced reports whether a request carrying this ACL may
// proceed on a BucketOwnerEnforced bucket: S3 accepts none, or a canned
// bucket-owner-full-control (or private on buckets), and answers
// AccessControlListNotSupported otherwise.
func ACLAllowedWhenEnforced(canned string, hasGrants bool) bool {
	if hasGrants {
		return false
	}
	return canned == "" || canned == "bucket-owner-full-control" || canned == "private"
}
