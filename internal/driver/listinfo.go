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

// setListedInfo fills *o, which is zero, from a listing's entry: Meta is
// not decoded except for an ACL's owner. Decoding every entry's metadata
// was ~7 % of a gateway's CPU under the RWLD mix (issue 24).
func setListedInfo(o *ListedObject, e *bucketindex.Entry) {
	o.Key, o.Size, o.ETag, o.ModTime, o.Parts, o.Owner, o.StorageClass = e.Key, e.Size, e.ETag, e.ModTime, e.Parts, e.Owner, e.Class
	// Most objects carry no ACL; a meta that mentions the name anywhere
	// (even in a value) is decoded, so none is missed.
	if bytes.Contains(e.Meta, aclField) {
		var m struct {
			ACL *authz.ACL `json:"acl"`
		}
		if json.Unmarshal(e.Meta, &m) == nil && m.ACL != nil {
			o.Owner = m.ACL.Owner.ID
		}
	}
}
