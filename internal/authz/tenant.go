package authz

import "strings"

// Tenants (RGW's multitenancy): a tenant stands in the account field of
// S3 ARNs ("arn:aws:s3::<tenant>:<bucket>") and IAM user ARNs
// ("arn:aws:iam::<tenant>:user/<uid>"); internally a tenant's bucket is
// "<tenant>/<bucket>" and its user "<tenant>$<uid>".

// s3ARN splits "arn:aws:s3::<account>:<resource>" (no region, as S3
// ARNs have none); the account field is a tenant, "" or "*".
func s3ARN(arn string) (account, resource string, ok bool) {
	rest, ok := strings.CutPrefix(arn, "arn:aws:s3::")
	if !ok {
		return "", "", false
	}
	account, resource, ok = strings.Cut(rest, ":")
	return account, resource, ok
}

// bindTenant puts tenant into an S3 resource pattern naming none (RGW:
// such a resource is the policy's tenant's).
func bindTenant(arn, tenant string) string {
	acct, rest, ok := s3ARN(arn)
	if !ok || (acct != "" && acct != "*") {
		return arn
	}
	return "arn:aws:s3::" + tenant + ":" + rest
}

// InTenant returns p with its S3 resources that name no tenant bound to
// tenant (the policy of a tenant's user); p itself when none changes.
// p is never modified: compiled policies are shared.
func (p *Policy) InTenant(tenant string) *Policy {
	if p == nil || tenant == "" {
		return p
	}
	var cp *Policy
	for i := range p.Statements {
		for j, r := range p.Statements[i].resources {
			b := bindTenant(r, tenant)
			if b == r {
				continue
			}
			if cp == nil {
				c := *p
				c.Statements = append([]Statement(nil), p.Statements...)
				cp = &c
			}
			st := &cp.Statements[i]
			if &st.resources[0] == &p.Statements[i].resources[0] {
				st.resources = append([]string(nil), st.resources...)
			}
			st.resources[j] = b
		}
	}
	if cp == nil {
		return p
	}
	return cp
}
