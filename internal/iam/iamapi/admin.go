package iamapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/cairn-s3/cairn/internal/driver"
	"github.com/cairn-s3/cairn/internal/iam"
)

// adminError is an admin API error with its code; the admin handlers of
// s3api render it (JSON) through their error mapping when it is an
// *s3err.Error, so these handlers write their own JSON errors.
type adminError struct {
	Code    string `json:"Code"`
	Message string `json:"Message"`
}

func writeJSON(w http.ResponseWriter, status int, v any) error {
	out, err := json.Marshal(v)
	if err != nil {
		return err
	}
	out = append(out, '\n')
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(out)))
	w.WriteHeader(status)
	_, _ = w.Write(out)
	return nil
}

func adminFail(w http.ResponseWriter, err error) error {
	e := mapError(err)
	return writeJSON(w, e.status, adminError{Code: e.code, Message: e.msg})
}

// accountJSON is radosgw-admin's account format.
type accountJSON struct {
	ID       string `json:"id"`
	Tenant   string `json:"tenant"`
	Name     string `json:"name"`
	Email    string `json:"email"`
	MaxUsers int    `json:"max_users"`
}

func accountOut(a iam.Account) accountJSON {
	m := a.MaxUsers
	if m == 0 {
		m = iam.DefaultMaxUsers
	}
	return accountJSON{ID: a.ID, Tenant: a.Tenant, Name: a.Name, Email: a.Email, MaxUsers: m}
}

// AdminAccount serves /admin/account (cairn admin account ...): GET
// ?account-id=|?account-name= (info), GET ?list (the account ids), PUT
// ?account-name=&email=[&account-id=] (create), DELETE ?account-id=|
// ?account-name= (rm); each with [&tenant=] (radosgw-admin's --tenant:
// names are unique per tenant, an id names an account of that tenant
// only, list lists the tenant's). The s3api admin gate admitted admins
// only and checked the tenant's name.
func (a *API) AdminAccount(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	ctx := r.Context()
	st := a.opts.Store
	tenant := q.Get("tenant")
	byID := func(id string) (iam.Account, error) {
		acct, err := st.GetAccount(ctx, id)
		if err == nil && q.Has("tenant") && acct.Tenant != tenant {
			return iam.Account{}, fmt.Errorf("%w: account %s is not in tenant %q", iam.ErrNoSuchEntity, id, tenant)
		}
		return acct, err
	}
	switch r.Method {
	case http.MethodGet:
		var acct iam.Account
		var err error
		switch {
		case q.Get("account-id") != "":
			acct, err = byID(q.Get("account-id"))
		case q.Get("account-name") != "":
			acct, err = st.AccountByNameIn(ctx, tenant, q.Get("account-name"))
		case !q.Has("list"):
			return adminFail(w, errorf(http.StatusBadRequest, "InvalidArgument", "Give --account-id or --account-name."))
		default:
			ids, err := st.ListAccounts(ctx)
			if err != nil {
				return adminFail(w, err)
			}
			out := []string{}
			for _, id := range ids {
				if q.Has("tenant") {
					if acct, err := st.GetAccount(ctx, id); err != nil || acct.Tenant != tenant {
						continue
					}
				}
				out = append(out, id)
			}
			return writeJSON(w, http.StatusOK, out)
		}
		if err != nil {
			return adminFail(w, err)
		}
		return writeJSON(w, http.StatusOK, accountOut(acct))
	case http.MethodPut, http.MethodPost:
		name := q.Get("account-name")
		if name == "" {
			return adminFail(w, errorf(http.StatusBadRequest, "InvalidArgument", "Missing required parameter \"account-name\"."))
		}
		acct, err := st.CreateAccountIn(ctx, tenant, q.Get("account-id"), name, q.Get("email"))
		if err != nil {
			return adminFail(w, err)
		}
		return writeJSON(w, http.StatusOK, accountOut(acct))
	case http.MethodDelete:
		id := q.Get("account-id")
		if id == "" && q.Get("account-name") != "" {
			acct, err := st.AccountByNameIn(ctx, tenant, q.Get("account-name"))
			if err != nil {
				return adminFail(w, err)
			}
			id = acct.ID
		} else if _, err := byID(id); err != nil {
			return adminFail(w, err)
		}
		if err := st.RemoveAccount(ctx, id); err != nil {
			return adminFail(w, err)
		}
		w.WriteHeader(http.StatusOK)
		return nil
	}
	return adminFail(w, errorf(http.StatusMethodNotAllowed, "MethodNotAllowed", "method not allowed"))
}

// AdminAccountUser serves /admin/account/user: PUT ?uid=&account-id=
// [&account-root=true][&display-name=][&email=][&access-key=&secret-key=]
// creates an account's user with a key (radosgw-admin user create
// --account-id [--account-root]); DELETE ?uid= removes one, its keys and
// name claim.
func (a *API) AdminAccountUser(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	ctx := r.Context()
	uid := q.Get("uid")
	if uid == "" {
		return adminFail(w, errorf(http.StatusBadRequest, "InvalidArgument", "Missing required parameter \"uid\"."))
	}
	switch r.Method {
	case http.MethodPut, http.MethodPost:
		acct := q.Get("account-id")
		if acct == "" {
			return adminFail(w, errorf(http.StatusBadRequest, "InvalidArgument", "Missing required parameter \"account-id\"."))
		}
		name := q.Get("display-name")
		if name == "" {
			_, name = driver.SplitUserID(uid) // a tenant's user's name is its uid within the tenant
		}
		spec := iam.UserSpec{ID: uid, Name: name, Email: q.Get("email"), Root: q.Get("account-root") == "true", GenerateKey: true}
		ak, sk := q.Get("access-key"), q.Get("secret-key")
		if (ak == "") != (sk == "") {
			return adminFail(w, errorf(http.StatusBadRequest, "InvalidArgument", "access-key and secret-key must be given together."))
		}
		if ak != "" {
			spec.Keys = []driver.Key{{User: uid, AccessKey: ak, SecretKey: sk}}
		}
		u, err := a.opts.Store.CreateUser(ctx, acct, spec)
		if err != nil {
			return adminFail(w, err)
		}
		return writeJSON(w, http.StatusOK, u)
	case http.MethodDelete:
		u, err := a.opts.Driver.GetUser(ctx, uid)
		if errors.Is(err, driver.ErrNoSuchUser) {
			return adminFail(w, errorf(http.StatusNotFound, "NoSuchUser", "The user %s does not exist.", uid))
		}
		if err != nil {
			return adminFail(w, err)
		}
		if err := a.opts.Store.RemoveUser(ctx, u); err != nil {
			return adminFail(w, err)
		}
		w.WriteHeader(http.StatusOK)
		return nil
	}
	return adminFail(w, errorf(http.StatusMethodNotAllowed, "MethodNotAllowed", "method not allowed"))
}
