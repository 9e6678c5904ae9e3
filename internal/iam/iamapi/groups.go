package iamapi

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/cairn-s3/cairn/internal/authz"
	"github.com/cairn-s3/cairn/internal/iam"
)

type groupXML struct {
	Path       string `xml:"Path"`
	GroupName  string `xml:"GroupName"`
	GroupID    string `xml:"GroupId"`
	Arn        string `xml:"Arn"`
	CreateDate string `xml:"CreateDate"`
}

func groupOut(g iam.Group) groupXML {
	p := g.Path
	if p == "" {
		p = "/"
	}
	return groupXML{Path: p, GroupName: g.Name, GroupID: g.ID, Arn: g.ARN(), CreateDate: isoTime(g.Created)}
}

// group finds the group GroupName names in the caller's account and
// authorizes act on it; a missing group is NoSuchEntity only to callers
// allowed to act on that name.
func (a *API) group(q *request, act authz.Action) (iam.Group, error) {
	acct, err := q.account()
	if err != nil {
		return iam.Group{}, err
	}
	name, err := q.required("GroupName")
	if err != nil {
		return iam.Group{}, err
	}
	g, err := a.opts.Store.GetGroup(q.r.Context(), acct, name)
	arn := iam.GroupARN(acct, "/", name)
	if err == nil {
		arn = g.ARN()
	}
	if aerr := a.authorize(q, act, acct, arn); aerr != nil {
		return iam.Group{}, aerr
	}
	return g, err
}

func (a *API) createGroup(q *request) (any, error) {
	acct, err := q.account()
	if err != nil {
		return nil, err
	}
	name, err := q.required("GroupName")
	if err != nil {
		return nil, err
	}
	path := q.get("Path")
	if err := a.authorize(q, authz.IAMCreateGroup, acct, iam.GroupARN(acct, path, name)); err != nil {
		return nil, err
	}
	g, err := a.opts.Store.CreateGroup(q.r.Context(), acct, name, path)
	if err != nil {
		return nil, err
	}
	return struct {
		Group groupXML `xml:"Group"`
	}{groupOut(g)}, nil
}

func (a *API) getGroup(q *request) (any, error) {
	g, err := a.group(q, authz.IAMGetGroup)
	if err != nil {
		return nil, err
	}
	members, err := a.opts.Store.Members(q.r.Context(), g)
	if err != nil {
		return nil, err
	}
	list, pg, err := usersPage(q, members)
	if err != nil {
		return nil, err
	}
	return struct {
		Group groupXML  `xml:"Group"`
		Users []userXML `xml:"Users>member"`
		pageXML
	}{groupOut(g), list, pg}, nil
}

func (a *API) listGroups(q *request) (any, error) {
	acct, prefix, err := a.listScope(q, authz.IAMListGroups, "group")
	if err != nil {
		return nil, err
	}
	gs, err := a.opts.Store.ListGroups(q.r.Context(), acct, prefix)
	if err != nil {
		return nil, err
	}
	return groupsPage(q, gs)
}

// groupsPage answers ListGroups and ListGroupsForUser.
func groupsPage(q *request, gs []iam.Group) (any, error) {
	list := []groupXML{}
	for _, g := range gs {
		list = append(list, groupOut(g))
	}
	list, pg, err := page(q, list, func(g groupXML) string { return strings.ToLower(g.GroupName) })
	if err != nil {
		return nil, err
	}
	return struct {
		Groups []groupXML `xml:"Groups>member"`
		pageXML
	}{list, pg}, nil
}

// updateGroup renames a group or changes its path; the caller needs
// iam:UpdateGroup on the group's old ARN and its new one (AWS).
func (a *API) updateGroup(q *request) (any, error) {
	g, err := a.group(q, authz.IAMUpdateGroup)
	if err != nil {
		return nil, err
	}
	newName, newPath := q.get("NewGroupName"), q.get("NewPath")
	if newName != "" || newPath != "" {
		n, p := g.Name, g.Path
		if newName != "" {
			n = newName
		}
		if newPath != "" {
			p = newPath
		}
		if err := a.authorize(q, authz.IAMUpdateGroup, g.Account, iam.GroupARN(g.Account, p, n)); err != nil {
			return nil, err
		}
	}
	_, err = a.opts.Store.UpdateGroup(q.r.Context(), g.Account, g.Name, newName, newPath)
	return nil, err
}

func (a *API) deleteGroup(q *request) (any, error) {
	g, err := a.group(q, authz.IAMDeleteGroup)
	if err != nil {
		return nil, err
	}
	return nil, a.opts.Store.DeleteGroup(q.r.Context(), g.Account, g.Name)
}

// membership authorizes act on the group (AWS's resource for
// AddUserToGroup / RemoveUserFromGroup) and finds the user.
func (a *API) membership(q *request, act authz.Action, add bool) error {
	g, err := a.group(q, act)
	if err != nil {
		return err
	}
	name, err := q.required("UserName")
	if err != nil {
		return err
	}
	u, err := a.opts.Store.GetUser(q.r.Context(), g.Account, name)
	if err != nil {
		return err
	}
	if u.AccountRoot {
		return errorf(http.StatusNotFound, "NoSuchEntity", "The user with name %s cannot be found.", name)
	}
	if add {
		return a.opts.Store.AddUserToGroup(q.r.Context(), u, g)
	}
	return a.opts.Store.RemoveUserFromGroup(q.r.Context(), u, g)
}

func (a *API) addUserToGroup(q *request) (any, error) {
	return nil, a.membership(q, authz.IAMAddUserToGroup, true)
}

func (a *API) removeUserFromGroup(q *request) (any, error) {
	return nil, a.membership(q, authz.IAMRemoveUserFromGroup, false)
}

func (a *API) listGroupsForUser(q *request) (any, error) {
	u, err := a.target(q, authz.IAMListGroupsForUser, false)
	if err != nil {
		return nil, err
	}
	gs, err := a.opts.Store.GroupsForUser(q.r.Context(), u)
	if err != nil {
		return nil, err
	}
	return groupsPage(q, gs)
}

func (a *API) putGroupPolicy(q *request) (any, error) {
	name, err := q.required("PolicyName")
	if err != nil {
		return nil, err
	}
	doc, err := q.required("PolicyDocument")
	if err != nil {
		return nil, err
	}
	g, err := a.group(q, authz.IAMPutGroupPolicy)
	if err != nil {
		return nil, err
	}
	return nil, a.opts.Store.PutGroupPolicy(q.r.Context(), g, name, doc)
}

func (a *API) getGroupPolicy(q *request) (any, error) {
	name, err := q.required("PolicyName")
	if err != nil {
		return nil, err
	}
	g, err := a.group(q, authz.IAMGetGroupPolicy)
	if err != nil {
		return nil, err
	}
	doc, ok := g.Policies[name]
	if !ok {
		return nil, errorf(http.StatusNotFound, "NoSuchEntity", "The group policy with name %s cannot be found.", name)
	}
	return struct {
		GroupName      string `xml:"GroupName"`
		PolicyName     string `xml:"PolicyName"`
		PolicyDocument string `xml:"PolicyDocument"`
	}{g.Name, name, url.PathEscape(doc)}, nil
}

func (a *API) listGroupPolicies(q *request) (any, error) {
	g, err := a.group(q, authz.IAMListGroupPolicies)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(g.Policies))
	for n := range g.Policies {
		names = append(names, n)
	}
	return namesPage(q, names)
}

func (a *API) deleteGroupPolicy(q *request) (any, error) {
	return change(q, "PolicyName", func() (iam.Group, error) { return a.group(q, authz.IAMDeleteGroupPolicy) }, a.opts.Store.DeleteGroupPolicy)
}

func (a *API) attachGroupPolicy(q *request) (any, error) {
	return change(q, "PolicyArn", func() (iam.Group, error) { return a.group(q, authz.IAMAttachGroupPolicy) }, a.opts.Store.AttachGroupPolicy)
}

func (a *API) detachGroupPolicy(q *request) (any, error) {
	return change(q, "PolicyArn", func() (iam.Group, error) { return a.group(q, authz.IAMDetachGroupPolicy) }, a.opts.Store.DetachGroupPolicy)
}

func (a *API) listAttachedGroupPolicies(q *request) (any, error) {
	g, err := a.group(q, authz.IAMListAttachedGroupPolicies)
	if err != nil {
		return nil, err
	}
	return attachedPage(q, g.ManagedPolicies)
}
