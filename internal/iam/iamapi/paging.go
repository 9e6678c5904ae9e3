package iamapi

import (
	"encoding/base64"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"github.com/cairn-s3/cairn/internal/authz"
)

// AWS's paging of IAM listings: MaxItems 1–1000 (default 100); a truncated
// answer carries IsTruncated and an opaque Marker the next request sends.
const (
	defaultMaxItems = 100
	maxMaxItems     = 1000
)

// pageXML is the tail every paged listing answers (embedded in its result).
type pageXML struct {
	IsTruncated bool   `xml:"IsTruncated"`
	Marker      string `xml:"Marker,omitempty"`
}

// page returns the items the request's Marker and MaxItems select. Items
// are ordered by key (unique per listing); the Marker is the last returned
// key, opaque to clients, so a listing changing between pages neither
// repeats nor skips an item that stayed. Listings are bounded by the
// account's limits (≤ 1000 users, roles, …), so paging over the whole
// list in memory is enough.
func page[T any](q *request, items []T, key func(T) string) ([]T, pageXML, error) {
	max := defaultMaxItems
	if v := q.get("MaxItems"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxMaxItems {
			return nil, pageXML{}, errorf(http.StatusBadRequest, "ValidationError",
				"1 validation error detected: Value '%s' at 'maxItems' failed to satisfy constraint: Member must have value between 1 and %d", v, maxMaxItems)
		}
		max = n
	}
	sort.SliceStable(items, func(i, j int) bool { return key(items[i]) < key(items[j]) })
	if m := q.get("Marker"); m != "" {
		after, err := base64.RawURLEncoding.DecodeString(m)
		if err != nil || len(after) == 0 {
			return nil, pageXML{}, errorf(http.StatusBadRequest, "ValidationError", "Invalid Marker.")
		}
		i := sort.Search(len(items), func(i int) bool { return key(items[i]) > string(after) })
		items = items[i:]
	}
	if len(items) <= max {
		return items, pageXML{}, nil
	}
	items = items[:max]
	return items, pageXML{IsTruncated: true, Marker: base64.RawURLEncoding.EncodeToString([]byte(key(items[max-1])))}, nil
}

func identity(s string) string { return s }

// attachedXML is one managed policy of a ListAttached*Policies answer.
type attachedXML struct {
	PolicyName string `xml:"PolicyName"`
	PolicyArn  string `xml:"PolicyArn"`
}

// attachedPage answers ListAttachedUser/Group/RolePolicies: the managed
// policies are AWS's, all at path "/", so a PathPrefix other than "/"
// selects none.
func attachedPage(q *request, arns []string) (any, error) {
	var sel []string
	if p := q.get("PathPrefix"); p == "" || strings.HasPrefix("/", p) {
		sel = append(sel, arns...)
	}
	sel, pg, err := page(q, sel, identity)
	if err != nil {
		return nil, err
	}
	out := struct {
		Policies []attachedXML `xml:"AttachedPolicies>member"`
		pageXML
	}{Policies: []attachedXML{}, pageXML: pg}
	for _, arn := range sel {
		out.Policies = append(out.Policies, attachedXML{authz.ManagedPolicyName(arn), arn})
	}
	return out, nil
}

// namesPage answers ListUser/Group/RolePolicies.
func namesPage(q *request, names []string) (any, error) {
	names, pg, err := page(q, append([]string(nil), names...), identity)
	if err != nil {
		return nil, err
	}
	return struct {
		Names []string `xml:"PolicyNames>member"`
		pageXML
	}{Names: names, pageXML: pg}, nil
}
