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
//	identity WHO NAME             JSON lines, then "----", then "ok" or "MalformedPolicy: REASON":
//	                              an identity policy of WHO (NAME "none" without a body clears them)
//	eval WHO ACTION BUCKET[/KEY] [KEY=VALUE...]   then "EFFECT: REASON"
//	iam WHO ACTION ACCOUNT[/USER] then "EFFECT: REASON" (an IAM action on ACCOUNT's user)
//
// WHO is anon, a user id, admin:ID, ACCOUNT/NAME (an account's user) or
// ACCOUNT/root (its root user). $A1 and $A2 stand for two account ids.
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
	idents := map[string]*IdentityPolicies{}
	sessions := map[string]*Policy{}
	var trust *Policy
	principal := func(who string) Principal {
		switch {
		case who == "anon":
			return Anonymous
		case strings.HasPrefix(who, "admin:"):
			return Principal{ID: who[6:], Admin: true}
		}
		p := Principal{ID: who, Identity: idents[who]}
		if acct, rest, ok := strings.Cut(who, "/"); ok && strings.HasPrefix(rest, "role:") {
			// $A/role:<role>:<session>: a role session, the role's identity
			// policies (identity $A/role:<role>) and its session policy.
			_, rs, _ := strings.Cut(rest, ":")
			role, sess, _ := strings.Cut(rs, ":")
			return Principal{ID: "AROA" + role + ":" + sess, Account: acct, Name: role, Path: "/",
				Identity: idents[acct+"/role:"+role],
				Session:  &Session{RoleID: "AROA" + role, RoleName: role, RolePath: "/", Name: sess, Policy: sessions[who]}}
		}
		if acct, name, ok := strings.Cut(who, "/"); ok {
			p.Account, p.Name, p.Root = acct, name, name == "root"
			p.ID = "uid-" + name
		}
		return p
	}
	owner := func(id string) Owner { return Owner{ID: id} }
	for {
		cmd, ok := next()
		if !ok {
			return
		}
		cmd = expandAccounts(cmd)
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
			p, err := ParseBucketPolicy([]byte(expandAccounts(doc.String())), "bk")
			got := "ok"
			if err != nil {
				got = "MalformedPolicy: " + err.(*MalformedPolicyError).Reason
			} else {
				in.Policy = p
			}
			if got != want {
				t.Errorf("%s: policy: got %q, want %q", at, got, want)
			}
		case "identity":
			who := expandAccounts(f[1])
			if f[2] == "none" {
				delete(idents, who)
				continue
			}
			var doc strings.Builder
			for sc.Scan() {
				line++
				if strings.TrimSpace(sc.Text()) == "----" {
					break
				}
				doc.WriteString(sc.Text() + "\n")
			}
			want, _ := next()
			p, err := ParseIdentityPolicy([]byte(expandAccounts(doc.String())))
			got := "ok"
			if err != nil {
				got = "MalformedPolicy: " + err.(*MalformedPolicyError).Reason
			} else {
				if idents[who] == nil {
					idents[who] = &IdentityPolicies{}
				}
				idents[who].Policies = append(idents[who].Policies, NamedPolicy{Name: f[2], Policy: p})
			}
			if got != want {
				t.Errorf("%s: identity: got %q, want %q", at, got, want)
			}
		case "session", "trust":
			var doc strings.Builder
			for sc.Scan() {
				line++
				if strings.TrimSpace(sc.Text()) == "----" {
					break
				}
				doc.WriteString(sc.Text() + "\n")
			}
			want, _ := next()
			var p *Policy
			var err error
			if f[0] == "trust" {
				p, err = ParseTrustPolicy([]byte(expandAccounts(doc.String())))
			} else {
				p, err = ParseSessionPolicy([]byte(expandAccounts(doc.String())))
			}
			got := "ok"
			if err != nil {
				got = "MalformedPolicy: " + err.(*MalformedPolicyError).Reason
			} else if f[0] == "trust" {
				trust = p
			} else {
				sessions[expandAccounts(f[1])] = p
			}
			if got != want {
				t.Errorf("%s: %s: got %q, want %q", at, f[0], got, want)
			}
		case "assume":
			// assume <who> <sts action> <account>/<role> [key=value...]
			a, ok := ActionByName(f[2])
			if !ok {
				t.Fatalf("%s: unknown action %s", at, f[2])
			}
			acct, role, _ := strings.Cut(f[3], "/")
			ain := Input{Owner: acct, Policy: trust, Request: Request{Principal: principal(f[1]), Action: a,
				Resource: Resource{IAM: RoleARN(acct, "/", role)}, Context: Context{}}}
			if strings.HasPrefix(f[1], "federated:") {
				ain.Principal = Principal{Federated: f[1][len("federated:"):]}
			}
			for _, kv := range f[4:] {
				k, v, _ := strings.Cut(kv, "=")
				ain.Context[strings.ToLower(k)] = append(ain.Context[strings.ToLower(k)], v)
			}
			d := Evaluate(&ain)
			got := d.Effect.String() + ": " + d.Reason
			want, _ := next()
			if got != want {
				t.Errorf("%s: %s\n got: %s\nwant: %s", at, cmd, got, want)
			}
		case "iam":
			a, ok := ActionByName(f[2])
			if !ok {
				t.Fatalf("%s: unknown action %s", at, f[2])
			}
			acct, user, _ := strings.Cut(f[3], "/")
			iin := Input{Owner: acct, Request: Request{Principal: principal(f[1]), Action: a,
				Resource: Resource{IAM: AccountUserARN(acct, "/", user)}}}
			d := Evaluate(&iin)
			got := d.Effect.String() + ": " + d.Reason
			want, _ := next()
			if got != want {
				t.Errorf("%s: %s\n got: %s\nwant: %s", at, cmd, got, want)
			}
		case "eval":
			req := Request{Context: Context{}}
			req.Principal = principal(f[1])
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

// expandAccounts replaces the transcript's account aliases.
func expandAccounts(s string) string {
	return strings.NewReplacer("$A1", "RGW00000000000000001", "$A2", "RGW00000000000000002").Replace(s)
}
