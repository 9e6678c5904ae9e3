package authz

import (
	"encoding/xml"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
)

// Group URIs S3 defines.
const (
	AllUsersURI           = "http://acs.amazonaws.com/groups/global/AllUsers"
	AuthenticatedUsersURI = "http://acs.amazonaws.com/groups/global/AuthenticatedUsers"
	LogDeliveryURI        = "http://acs.amazonaws.com/groups/s3/LogDelivery"
)

// GranteeType is an ACL grantee's xsi:type.
type GranteeType uint8

// Grantee types.
const (
	GranteeCanonicalUser GranteeType = iota + 1
	GranteeGroup
	// GranteeEmail is AmazonCustomerByEmail; stored ACLs never hold it:
	// ResolveEmails turns it into a CanonicalUser.
	GranteeEmail
)

func (t GranteeType) String() string {
	switch t {
	case GranteeCanonicalUser:
		return "CanonicalUser"
	case GranteeGroup:
		return "Group"
	case GranteeEmail:
		return "AmazonCustomerByEmail"
	}
	return "invalid"
}

// Grantee is whom a grant is to.
type Grantee struct {
	Type        GranteeType `json:"t"`
	ID          string      `json:"id,omitempty"`
	DisplayName string      `json:"dn,omitempty"`
	Email       string      `json:"em,omitempty"`
	URI         string      `json:"uri,omitempty"`
}

// Grant is one ACL entry.
type Grant struct {
	Grantee    Grantee    `json:"g"`
	Permission Permission `json:"p"`
}

// Owner is a resource owner.
type Owner struct {
	ID          string `json:"id"`
	DisplayName string `json:"dn,omitempty"`
}

// ACL is an S3 access control list.
type ACL struct {
	Owner  Owner   `json:"owner"`
	Grants []Grant `json:"grants"`
}

// ACL errors; s3api maps them to S3 codes.
var (
	ErrInvalidCannedACL = errors.New("invalid canned ACL")     // InvalidArgument
	ErrInvalidGrant     = errors.New("invalid grant")          // InvalidArgument
	ErrUnresolvable     = errors.New("unresolvable email")     // UnresolvableGrantByEmailAddress
	ErrMalformedACL     = errors.New("malformed ACL XML")      // MalformedACLError
	ErrInvalidOwner     = errors.New("ACL owner is not yours") // AccessDenied
)

// PermissionName returns the S3 name of a single permission or
// FULL_CONTROL.
func (p Permission) String() string {
	switch p {
	case PermRead:
		return "READ"
	case PermWrite:
		return "WRITE"
	case PermReadACP:
		return "READ_ACP"
	case PermWriteACP:
		return "WRITE_ACP"
	case PermFullControl:
		return "FULL_CONTROL"
	}
	return fmt.Sprintf("Permission(%d)", uint8(p))
}

// ParsePermission parses READ, WRITE, READ_ACP, WRITE_ACP, FULL_CONTROL.
func ParsePermission(s string) (Permission, bool) {
	for _, p := range []Permission{PermRead, PermWrite, PermReadACP, PermWriteACP, PermFullControl} {
		if s == p.String() {
			return p, true
		}
	}
	return 0, false
}

// CannedACL builds the named canned ACL for a resource owned by owner;
// bucketOwner matters for the bucket-owner-* object ACLs. An empty name
// is private.
func CannedACL(name string, owner, bucketOwner Owner) (ACL, error) {
	acl := ACL{Owner: owner, Grants: []Grant{userGrant(owner, PermFullControl)}}
	group := func(uri string, p Permission) Grant {
		return Grant{Grantee: Grantee{Type: GranteeGroup, URI: uri}, Permission: p}
	}
	switch name {
	case "", "private":
	case "public-read":
		acl.Grants = append(acl.Grants, group(AllUsersURI, PermRead))
	case "public-read-write":
		acl.Grants = append(acl.Grants, group(AllUsersURI, PermRead), group(AllUsersURI, PermWrite))
	case "authenticated-read":
		acl.Grants = append(acl.Grants, group(AuthenticatedUsersURI, PermRead))
	case "bucket-owner-read":
		if bucketOwner.ID != owner.ID {
			acl.Grants = append(acl.Grants, userGrant(bucketOwner, PermRead))
		}
	case "bucket-owner-full-control":
		if bucketOwner.ID != owner.ID {
			acl.Grants = append(acl.Grants, userGrant(bucketOwner, PermFullControl))
		}
	case "log-delivery-write":
		acl.Grants = append(acl.Grants, group(LogDeliveryURI, PermWrite), group(LogDeliveryURI, PermReadACP))
	default:
		return ACL{}, ErrInvalidCannedACL
	}
	return acl, nil
}

func userGrant(o Owner, p Permission) Grant {
	return Grant{Grantee: Grantee{Type: GranteeCanonicalUser, ID: o.ID, DisplayName: o.DisplayName}, Permission: p}
}

// GrantHeaders are the x-amz-grant-* request headers and the permission
// each grants.
var GrantHeaders = []struct {
	Header string
	Perm   Permission
}{
	{"X-Amz-Grant-Read", PermRead}, // canonical: Header.Get allocates for any other spelling
	{"X-Amz-Grant-Write", PermWrite},
	{"X-Amz-Grant-Read-Acp", PermReadACP},
	{"X-Amz-Grant-Write-Acp", PermWriteACP},
	{"X-Amz-Grant-Full-Control", PermFullControl},
}

// HasGrantHeaders reports whether h carries any x-amz-grant-* header.
func HasGrantHeaders(h http.Header) bool {
	for _, g := range GrantHeaders {
		if h.Get(g.Header) != "" {
			return true
		}
	}
	return false
}

// ParseGrantHeaders builds the grants of the x-amz-grant-* headers, e.g.
// `x-amz-grant-read: id="u1", emailAddress="a@b", uri="http://..."`.
// Email grantees are returned unresolved (see ResolveEmails).
func ParseGrantHeaders(h http.Header) ([]Grant, error) {
	var out []Grant
	for _, gh := range GrantHeaders {
		for _, line := range h.Values(gh.Header) {
			for _, item := range splitGrantList(line) {
				k, v, ok := strings.Cut(item, "=")
				if !ok {
					return nil, fmt.Errorf("%w: %q", ErrInvalidGrant, item)
				}
				k = strings.ToLower(strings.TrimSpace(k))
				v = strings.TrimSpace(v)
				if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
					v = v[1 : len(v)-1]
				}
				if v == "" {
					return nil, fmt.Errorf("%w: empty %s", ErrInvalidGrant, k)
				}
				g := Grant{Permission: gh.Perm}
				switch k {
				case "id":
					g.Grantee = Grantee{Type: GranteeCanonicalUser, ID: v}
				case "emailaddress":
					g.Grantee = Grantee{Type: GranteeEmail, Email: v}
				case "uri":
					if !knownGroup(v) {
						return nil, fmt.Errorf("%w: unknown group %q", ErrInvalidGrant, v)
					}
					g.Grantee = Grantee{Type: GranteeGroup, URI: v}
				default:
					return nil, fmt.Errorf("%w: unknown grantee type %q", ErrInvalidGrant, k)
				}
				out = append(out, g)
			}
		}
	}
	return out, nil
}

// splitGrantList splits on commas outside quotes.
func splitGrantList(s string) []string {
	var out []string
	quoted, start := false, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '"':
			quoted = !quoted
		case ',':
			if !quoted {
				if t := strings.TrimSpace(s[start:i]); t != "" {
					out = append(out, t)
				}
				start = i + 1
			}
		}
	}
	if t := strings.TrimSpace(s[start:]); t != "" {
		out = append(out, t)
	}
	return out
}

func knownGroup(uri string) bool {
	return uri == AllUsersURI || uri == AuthenticatedUsersURI || uri == LogDeliveryURI
}

// UserResolver finds users for grants: by email, and by id to check it
// exists and fill the display name. ok=false means no such user.
type UserResolver interface {
	UserByEmail(email string) (Owner, bool)
	UserByID(id string) (Owner, bool)
}

// Resolve checks every grantee: email grantees become canonical users
// (ErrUnresolvable when no user has the address), canonical ids must name
// a user (ErrInvalidGrant otherwise) and get their display names.
func (a *ACL) Resolve(r UserResolver) error {
	for i := range a.Grants {
		g := &a.Grants[i].Grantee
		switch g.Type {
		case GranteeEmail:
			o, ok := r.UserByEmail(g.Email)
			if !ok {
				return fmt.Errorf("%w: %s", ErrUnresolvable, g.Email)
			}
			*g = Grantee{Type: GranteeCanonicalUser, ID: o.ID, DisplayName: o.DisplayName}
		case GranteeCanonicalUser:
			o, ok := r.UserByID(g.ID)
			if !ok {
				return fmt.Errorf("%w: no user with id %q", ErrInvalidGrant, g.ID)
			}
			g.DisplayName = o.DisplayName
		case GranteeGroup:
			if !knownGroup(g.URI) {
				return fmt.Errorf("%w: unknown group %q", ErrInvalidGrant, g.URI)
			}
		default:
			return ErrInvalidGrant
		}
	}
	return nil
}

// IsPublic reports whether the ACL grants anything to AllUsers or
// AuthenticatedUsers (AWS counts both as public).
func (a *ACL) IsPublic() bool {
	if a == nil {
		return false
	}
	for _, g := range a.Grants {
		if isPublicGrant(g) {
			return true
		}
	}
	return false
}

func isPublicGrant(g Grant) bool {
	return g.Grantee.Type == GranteeGroup && (g.Grantee.URI == AllUsersURI || g.Grantee.URI == AuthenticatedUsersURI)
}

// Permits reports whether the ACL grants perm to p, and which grant did
// (-1 for the owner's implicit READ_ACP/WRITE_ACP: an owner can always
// read and fix its ACL, as in RGW). Public grants are skipped when
// ignorePublic (IgnorePublicAcls).
func (a *ACL) Permits(p Principal, perm Permission, ignorePublic bool) (bool, int) {
	if a == nil || perm == 0 {
		return false, 0
	}
	for i, g := range a.Grants {
		if g.Permission&perm != perm {
			continue
		}
		switch g.Grantee.Type {
		case GranteeCanonicalUser:
			if !p.IsAnonymous() && g.Grantee.ID == p.ID {
				return true, i
			}
		case GranteeGroup:
			if ignorePublic && isPublicGrant(g) {
				continue
			}
			if g.Grantee.URI == AllUsersURI || (g.Grantee.URI == AuthenticatedUsersURI && !p.IsAnonymous()) {
				return true, i
			}
		}
	}
	if !p.IsAnonymous() && p.ID == a.Owner.ID && perm&^(PermReadACP|PermWriteACP) == 0 {
		return true, -1
	}
	return false, 0
}

// DescribeGrant names grant i for decision reasons.
func (a *ACL) DescribeGrant(i int) string {
	if i < 0 {
		return "ACL owner " + a.Owner.ID
	}
	g := a.Grants[i]
	who := g.Grantee.ID
	if g.Grantee.Type == GranteeGroup {
		who = g.Grantee.URI
	}
	return fmt.Sprintf("ACL grant %s to %s %s", g.Permission, g.Grantee.Type, who)
}

// ListedGrants returns the grants in the order RGW lists them, which
// s3-tests holds clients to: RGW keeps grants in a multimap keyed by the
// grantee's user id (empty for groups), so group grants come first, then
// users by id, each key's grants in the order they were given.
func (a *ACL) ListedGrants() []Grant {
	out := append([]Grant(nil), a.Grants...)
	key := func(g Grant) string {
		switch g.Grantee.Type {
		case GranteeCanonicalUser:
			return g.Grantee.ID
		case GranteeEmail:
			return g.Grantee.Email
		}
		return ""
	}
	sort.SliceStable(out, func(i, j int) bool { return key(out[i]) < key(out[j]) })
	return out
}

// --- AccessControlPolicy XML ---

const xsiNS = "http://www.w3.org/2001/XMLSchema-instance"

type xmlACP struct {
	XMLName xml.Name   `xml:"AccessControlPolicy"`
	Owner   *xmlOwner  `xml:"Owner"`
	Grants  []xmlGrant `xml:"AccessControlList>Grant"`
}

type xmlOwner struct {
	ID          string `xml:"ID"`
	DisplayName string `xml:"DisplayName,omitempty"`
}

type xmlGrant struct {
	Grantee    *xmlGrantee `xml:"Grantee"`
	Permission string      `xml:"Permission"`
}

type xmlGrantee struct {
	Type         string
	ID           string
	DisplayName  string
	EmailAddress string
	URI          string
}

// UnmarshalXML reads the xsi:type attribute whatever prefix binds it.
func (g *xmlGrantee) UnmarshalXML(d *xml.Decoder, start xml.StartElement) error {
	for _, a := range start.Attr {
		if a.Name.Local == "type" {
			g.Type = a.Value
		}
	}
	var body struct {
		ID           string `xml:"ID"`
		DisplayName  string `xml:"DisplayName"`
		EmailAddress string `xml:"EmailAddress"`
		URI          string `xml:"URI"`
	}
	if err := d.DecodeElement(&body, &start); err != nil {
		return err
	}
	g.ID, g.DisplayName, g.EmailAddress, g.URI = body.ID, body.DisplayName, body.EmailAddress, body.URI
	return nil
}

// MarshalXML writes xmlns:xsi and xsi:type the way S3 does.
func (g xmlGrantee) MarshalXML(e *xml.Encoder, start xml.StartElement) error {
	start.Attr = []xml.Attr{
		{Name: xml.Name{Local: "xmlns:xsi"}, Value: xsiNS},
		{Name: xml.Name{Local: "xsi:type"}, Value: g.Type},
	}
	if err := e.EncodeToken(start); err != nil {
		return err
	}
	el := func(name, v string) error {
		if v == "" {
			return nil
		}
		return e.EncodeElement(v, xml.StartElement{Name: xml.Name{Local: name}})
	}
	for _, kv := range [][2]string{{"ID", g.ID}, {"DisplayName", g.DisplayName}, {"EmailAddress", g.EmailAddress}, {"URI", g.URI}} {
		if err := el(kv[0], kv[1]); err != nil {
			return err
		}
	}
	return e.EncodeToken(start.End())
}

// ParseACLXML parses an AccessControlPolicy body. The grants are returned
// unresolved (see Resolve). A document without an Owner keeps owner's.
func ParseACLXML(body []byte, owner Owner) (ACL, error) {
	var x xmlACP
	if err := xml.Unmarshal(body, &x); err != nil {
		return ACL{}, fmt.Errorf("%w: %v", ErrMalformedACL, err)
	}
	acl := ACL{Owner: owner}
	if x.Owner != nil {
		if x.Owner.ID == "" {
			return ACL{}, fmt.Errorf("%w: Owner without ID", ErrMalformedACL)
		}
		// S3 refuses to change the owner through an ACL.
		if x.Owner.ID != owner.ID {
			return ACL{}, ErrInvalidOwner
		}
	}
	for _, xg := range x.Grants {
		if xg.Grantee == nil {
			return ACL{}, fmt.Errorf("%w: Grant without Grantee", ErrMalformedACL)
		}
		perm, ok := ParsePermission(xg.Permission)
		if !ok {
			return ACL{}, fmt.Errorf("%w: Permission %q", ErrMalformedACL, xg.Permission)
		}
		g := Grant{Permission: perm}
		switch xg.Grantee.Type {
		case "CanonicalUser":
			if xg.Grantee.ID == "" {
				return ACL{}, fmt.Errorf("%w: CanonicalUser without ID", ErrInvalidGrant)
			}
			g.Grantee = Grantee{Type: GranteeCanonicalUser, ID: xg.Grantee.ID}
		case "AmazonCustomerByEmail":
			if xg.Grantee.EmailAddress == "" {
				return ACL{}, fmt.Errorf("%w: AmazonCustomerByEmail without EmailAddress", ErrInvalidGrant)
			}
			g.Grantee = Grantee{Type: GranteeEmail, Email: xg.Grantee.EmailAddress}
		case "Group":
			if !knownGroup(xg.Grantee.URI) {
				return ACL{}, fmt.Errorf("%w: unknown group %q", ErrInvalidGrant, xg.Grantee.URI)
			}
			g.Grantee = Grantee{Type: GranteeGroup, URI: xg.Grantee.URI}
		default:
			return ACL{}, fmt.Errorf("%w: grantee type %q", ErrMalformedACL, xg.Grantee.Type)
		}
		acl.Grants = append(acl.Grants, g)
	}
	return acl, nil
}

// AppendXML renders the ACL as an AccessControlPolicy (GetBucketAcl,
// GetObjectAcl), with S3's namespace, grants in RGW's order (ListedGrants).
func (a ACL) AppendXML(b []byte) ([]byte, error) {
	x := struct {
		XMLName xml.Name   `xml:"http://s3.amazonaws.com/doc/2006-03-01/ AccessControlPolicy"`
		Owner   xmlOwner   `xml:"Owner"`
		Grants  []xmlGrant `xml:"AccessControlList>Grant"`
	}{Owner: xmlOwner{ID: a.Owner.ID, DisplayName: a.Owner.DisplayName}}
	x.Grants = []xmlGrant{} // an empty list still renders
	for _, g := range a.ListedGrants() {
		x.Grants = append(x.Grants, xmlGrant{
			Grantee: &xmlGrantee{
				Type: g.Grantee.Type.String(), ID: g.Grantee.ID, DisplayName: g.Grantee.DisplayName,
				EmailAddress: g.Grantee.Email, URI: g.Grantee.URI,
			},
			Permission: g.Permission.String(),
		})
	}
	out, err := xml.Marshal(x)
	if err != nil {
		return nil, err
	}
	return append(append(b, xml.Header...), out...), nil
}
