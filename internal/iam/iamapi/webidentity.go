package iamapi

import "net/http"

func (a *API) assumeRoleWithWebIdentity(q *request) (any, error) {
	return nil, errorf(http.StatusNotImplemented, "NotImplemented", "AssumeRoleWithWebIdentity is not implemented yet.")
}
