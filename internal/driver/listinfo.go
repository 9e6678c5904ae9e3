package driver

import (
	"bytes"

	"github.com/cairn-s3/cairn/internal/authz"
	"github.com/cairn-s3/cairn/internal/bucketindex"
	json "github.com/goccy/go-json"
)

// aclField is ObjectMeta.ACL's JSON name as json.Marshal writes it: the
// index's listing projection keeps a Meta that holds it.
var aclField = []byte(bucketindex.MetaACLField)

// listedInfo is entryInfo for a listing, which shows key, size, ETag,
// mtime, class and owner only: Meta is not decoded (ListObjectsResult's
// objects carry none) except for an ACL's owner, and PartSizes stay nil.
// Decoding every entry's metadata was ~7 % of a gateway's CPU under the
// RWLD mix (issue 24).
func listedInfo(bucket string, e bucketindex.Entry) ObjectInfo {
	var oi ObjectInfo
	setListedInfo(&oi, bucket, &e)
	return oi
}

// setListedInfo is listedInfo into *oi, which is zero.
func setListedInfo(oi *ObjectInfo, bucket string, e *bucketindex.Entry) {
	oi.Bucket, oi.Key, oi.Size, oi.ETag, oi.ModTime, oi.Parts, oi.Owner, oi.StorageClass = bucket, e.Key, e.Size, e.ETag, e.ModTime, e.Parts, e.Owner, e.Class
	// Most objects carry no ACL; a meta that mentions the name anywhere
	// (even in a value) is decoded, so none is missed.
	if bytes.Contains(e.Meta, aclField) {
		var m struct {
			ACL *authz.ACL `json:"acl"`
		}
		if json.Unmarshal(e.Meta, &m) == nil && m.ACL != nil {
			oi.Owner = m.ACL.Owner.ID
		}
	}
}
