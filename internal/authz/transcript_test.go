package authz

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTranscripts runs testdata/*.txt: scripts of state changes and
// authorization questions with their expected decisions. Commands:
//
//	owner ID                      bucket owner (default alice)
//	acl bucket|object CANNED [OBJECT-OWNER]
//	grant bucket|object PERM WHO  add a grant (WHO: a user id, AllUsers, AuthenticatedUsers)
//	pab FLAG[,FLAG...]|none       public access block settings
//	ownership MODE
//	policy                        JSON lines, then "----", then "ok" or "MalformedPolicy: REASON"
//	eval WHO ACTION BUCKET[/KEY] [KEY=VALUE...]   then "EFFECT: REASON"
//
// WHO is anon, a user id, or admin:ID.
func TestTranscripts(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.txt")
	if len(files) == 0 {
		t.Fatal("no transcripts")
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) { runTranscript(t, f) })
	}
}

func runTranscript(t *testing.T, path string) {
	fh, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	sc := bufio.NewScanner(fh)
	line := 0
	next := func() (string, bool) {
		for sc.Scan() {
			line++
			s := strings.TrimSpace(sc.Text())
			if s == "" || strings.HasPrefix(s, "#") {
				continue
			}
			return s, true
		}
		return "", false
	}
	in := Input{Owner: alice}
	owner := func(id string) Owner { return Owner{ID: id} }
	for {
		cmd, ok := next()
		if !ok {
			return
		}
		f := strings.Fields(cmd)
		at := fmt.Sprintf("%s:%d", path, line)
		switch f[0] {
		case "owner":
			in.Owner = f[1]
		case "acl":
			oo := in.Owner
			if len(f) > 3 {
				oo = f[3]
			}
			acl, err := CannedACL(f[2], owner(oo), owner(in.Owner))
			if err != nil {
				t.Fatalf("%s: %v", at, err)
			}
			if f[1] == "bucket" {
				in.BucketACL = &acl
			} else {
				in.ObjectACL = &acl
			}
		case "grant":
			acl := in.BucketACL
			if f[1] == "object" {
				acl = in.ObjectACL
			}
			perm, ok := ParsePermission(f[2])
			if acl == nil || !ok {
				t.Fatalf("%s: bad grant", at)
			}
			g := Grant{Permission: perm, Grantee: Grantee{Type: GranteeCanonicalUser, ID: f[3]}}
			switch f[3] {
			case "AllUsers":
				g.Grantee = Grantee{Type: GranteeGroup, URI: AllUsersURI}
			case "AuthenticatedUsers":
				g.Grantee = Grantee{Type: GranteeGroup, URI: AuthenticatedUsersURI}
			}
			acl.Grants = append(acl.Grants, g)
		case "pab":
			in.PublicAccessBlock = PublicAccessBlock{}
			for _, fl := range strings.Split(f[1], ",") {
				switch fl {
				case "BlockPublicAcls":
					in.PublicAccessBlock.BlockPublicAcls = true
				case "IgnorePublicAcls":
					in.PublicAccessBlock.IgnorePublicAcls = true
				case "BlockPublicPolicy":
					in.PublicAccessBlock.BlockPublicPolicy = true
				case "RestrictPublicBuckets":
					in.PublicAccessBlock.RestrictPublicBuckets = true
				}
			}
		case "ownership":
			in.Ownership = Ownership(f[1])
		case "policy":
			var doc strings.Builder
			for sc.Scan() {
				line++
				if strings.TrimSpace(sc.Text()) == "----" {
					break
				}
				doc.WriteString(sc.Text() + "\n")
			}
			want, _ := next()
			p, err := ParseBucketPolicy([]byte(doc.String()), "bk")
			got := "ok"
			if err != nil {
				got = "MalformedPolicy: " + err.(*MalformedPolicyError).Reason
			} else {
				in.Policy = p
			}
			if got != want {
				t.Errorf("%s: policy: got %q, want %q", at, got, want)
			}
		case "eval":
			req := Request{Context: Context{}}
			switch who := f[1]; {
			case who == "anon":
				req.Principal = Anonymous
			case strings.HasPrefix(who, "admin:"):
				req.Principal = Principal{ID: who[6:], Admin: true}
			default:
				req.Principal = Principal{ID: who}
			}
			a, ok := ActionByName(f[2])
			if !ok {
				t.Fatalf("%s: unknown action %s", at, f[2])
			}
			req.Action = a
			req.Resource.Bucket, req.Resource.Key, _ = strings.Cut(f[3], "/")
			for _, kv := range f[4:] {
				k, v, _ := strings.Cut(kv, "=")
				k = strings.ToLower(k)
				req.Context[k] = append(req.Context[k], v)
			}
			in.Request = req
			d := Evaluate(&in)
			got := d.Effect.String() + ": " + d.Reason
			want, _ := next()
			if got != want {
				t.Errorf("%s: %s\n got: %s\nwant: %s", at, cmd, got, want)
			}
		default:
			t.Fatalf("%s: unknown command %q", at, cmd)
		}
	}
}
