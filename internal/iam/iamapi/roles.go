package iamapi

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/cairn-s3/cairn/internal/authz"
	"github.com/cairn-s3/cairn/internal/iam"
)

type tagXML struct {
	Key   string `xml:"Key"`
	Value string `xml:"Value"`
}

type roleXML struct {
	Path                     string   `xml:"Path"`
	RoleName                 string   `xml:"RoleName"`
	RoleID                   string   `xml:"RoleId"`
	Arn                      string   `xml:"Arn"`
	CreateDate               string   `xml:"CreateDate"`
	AssumeRolePolicyDocument string   `xml:"AssumeRolePolicyDocument"`
	Description              string   `xml:"Description,omitempty"`
	MaxSessionDuration       int      `xml:"MaxSessionDuration"`
	Tags                     []tagXML `xml:"Tags>member,omitempty"`
}

func roleOut(r iam.Role) roleXML {
	p := r.Path
	if p == "" {
		p = "/"
	}
	out := roleXML{Path: p, RoleName: r.Name, RoleID: r.ID, Arn: r.ARN(), CreateDate: isoTime(r.Created),
		AssumeRolePolicyDocument: url.PathEscape(r.TrustPolicy), Description: r.Description,
		MaxSessionDuration: r.MaxSessionDuration}
	for _, t := range r.Tags {
		out.Tags = append(out.Tags, tagXML(t))
	}
	return out
}

// tags reads Tags.member.N.Key/Value.
func (q *request) tags() ([]iam.Tag, error) {
	var out []iam.Tag
	for i := 1; ; i++ {
		k := fmt.Sprintf("Tags.member.%d.", i)
		if !q.form.Has(k+"Key") && !q.form.Has(k+"Value") {
			return out, nil
		}
		if i > iam.MaxRoleTags {
			return nil, errorf(http.StatusConflict, "LimitExceeded", "at most %d tags", iam.MaxRoleTags)
		}
		out = append(out, iam.Tag{Key: q.get(k + "Key"), Value: q.get(k + "Value")})
	}
}

// role finds the role RoleName names in the caller's account and
// authorizes act on it; who may not act on the name learns nothing.
func (a *API) role(q *request, act authz.Action) (iam.Role, error) {
	acct, err := q.account()
	if err != nil {
		return iam.Role{}, err
	}
	name, err := q.required("RoleName")
	if err != nil {
		return iam.Role{}, err
	}
	r, err := a.opts.Store.GetRole(q.r.Context(), acct, name)
	if err != nil {
		if errors.Is(err, iam.ErrNoSuchEntity) {
			if aerr := a.authorize(q, act, acct, authz.RoleARN(acct, "/", name)); aerr != nil {
				return iam.Role{}, aerr
			}
		}
		return iam.Role{}, err
	}
	return r, a.authorize(q, act, acct, r.ARN())
}

func (a *API) createRole(q *request) (any, error) {
	acct, err := q.account()
	if err != nil {
		return nil, err
	}
	name, err := q.required("RoleName")
	if err != nil {
		return nil, err
	}
	doc, err := q.required("AssumeRolePolicyDocument")
	if err != nil {
		return nil, err
	}
	path := q.get("Path")
	if err := a.authorize(q, authz.IAMCreateRole, acct, authz.RoleARN(acct, path, name)); err != nil {
		return nil, err
	}
	if q.form.Has("PermissionsBoundary") {
		return nil, errorf(http.StatusNotImplemented, "NotImplemented", "Permissions boundaries are not implemented.")
	}
	spec := iam.RoleSpec{Name: name, Path: path, Description: q.get("Description"), TrustPolicy: doc}
	if v := q.get("MaxSessionDuration"); v != "" {
		if spec.MaxSessionDuration, err = strconv.Atoi(v); err != nil || spec.MaxSessionDuration == 0 {
			return nil, errorf(http.StatusBadRequest, "ValidationError", "MaxSessionDuration %q is not a number of seconds", v)
		}
	}
	if spec.Tags, err = q.tags(); err != nil {
		return nil, err
	}
	r, err := a.opts.Store.CreateRole(q.r.Context(), acct, spec)
	if err != nil {
		return nil, err
	}
	return struct {
		Role roleXML `xml:"Role"`
	}{roleOut(r)}, nil
}

func (a *API) getRole(q *request) (any, error) {
	r, err := a.role(q, authz.IAMGetRole)
	if err != nil {
		return nil, err
	}
	return struct {
		Role roleXML `xml:"Role"`
	}{roleOut(r)}, nil
}

func (a *API) listRoles(q *request) (any, error) {
	acct, prefix, err := a.listScope(q, authz.IAMListRoles, "role")
	if err != nil {
		return nil, err
	}
	roles, err := a.opts.Store.ListRoles(q.r.Context(), acct, prefix)
	if err != nil {
		return nil, err
	}
	list := []roleXML{}
	for _, r := range roles {
		list = append(list, roleOut(r))
	}
	list, pg, err := page(q, list, func(r roleXML) string { return strings.ToLower(r.RoleName) })
	if err != nil {
		return nil, err
	}
	return struct {
		Roles []roleXML `xml:"Roles>member"`
		pageXML
	}{list, pg}, nil
}

func (a *API) deleteRole(q *request) (any, error) {
	r, err := a.role(q, authz.IAMDeleteRole)
	if err != nil {
		return nil, err
	}
	return nil, a.opts.Store.DeleteRole(q.r.Context(), r.Account, r.Name)
}

func (a *API) updateRole(q *request) (any, error) {
	r, err := a.role(q, authz.IAMUpdateRole)
	if err != nil {
		return nil, err
	}
	var desc *string
	if q.form.Has("Description") {
		d := q.get("Description")
		desc = &d
	}
	max := 0
	if v := q.get("MaxSessionDuration"); v != "" {
		if max, err = strconv.Atoi(v); err != nil || max == 0 {
			return nil, errorf(http.StatusBadRequest, "ValidationError", "MaxSessionDuration %q is not a number of seconds", v)
		}
	}
	return struct{}{}, a.opts.Store.UpdateRole(q.r.Context(), r, desc, max) // AWS answers an empty UpdateRoleResult
}

func (a *API) updateAssumeRolePolicy(q *request) (any, error) {
	return change(q, "PolicyDocument", func() (iam.Role, error) { return a.role(q, authz.IAMUpdateAssumeRolePolicy) }, a.opts.Store.UpdateAssumeRolePolicy)
}

func (a *API) putRolePolicy(q *request) (any, error) {
	name, err := q.required("PolicyName")
	if err != nil {
		return nil, err
	}
	doc, err := q.required("PolicyDocument")
	if err != nil {
		return nil, err
	}
	r, err := a.role(q, authz.IAMPutRolePolicy)
	if err != nil {
		return nil, err
	}
	return nil, a.opts.Store.PutRolePolicy(q.r.Context(), r, name, doc)
}

func (a *API) getRolePolicy(q *request) (any, error) {
	name, err := q.required("PolicyName")
	if err != nil {
		return nil, err
	}
	r, err := a.role(q, authz.IAMGetRolePolicy)
	if err != nil {
		return nil, err
	}
	doc, err := iam.RolePolicy(r, name)
	if err != nil {
		return nil, err
	}
	return struct {
		RoleName       string `xml:"RoleName"`
		PolicyName     string `xml:"PolicyName"`
		PolicyDocument string `xml:"PolicyDocument"`
	}{r.Name, name, url.PathEscape(doc)}, nil
}

func (a *API) listRolePolicies(q *request) (any, error) {
	r, err := a.role(q, authz.IAMListRolePolicies)
	if err != nil {
		return nil, err
	}
	return namesPage(q, iam.PolicyNames(r.Policies))
}

func (a *API) deleteRolePolicy(q *request) (any, error) {
	return change(q, "PolicyName", func() (iam.Role, error) { return a.role(q, authz.IAMDeleteRolePolicy) }, a.opts.Store.DeleteRolePolicy)
}

func (a *API) attachRolePolicy(q *request) (any, error) {
	return change(q, "PolicyArn", func() (iam.Role, error) { return a.role(q, authz.IAMAttachRolePolicy) }, a.opts.Store.AttachRolePolicy)
}

func (a *API) detachRolePolicy(q *request) (any, error) {
	return change(q, "PolicyArn", func() (iam.Role, error) { return a.role(q, authz.IAMDetachRolePolicy) }, a.opts.Store.DetachRolePolicy)
}

func (a *API) listAttachedRolePolicies(q *request) (any, error) {
	r, err := a.role(q, authz.IAMListAttachedRolePolicies)
	if err != nil {
		return nil, err
	}
	return attachedPage(q, r.ManagedPolicies)
}
