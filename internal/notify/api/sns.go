package api

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/cairn-s3/cairn/internal/authz"
	"github.com/cairn-s3/cairn/internal/notify/queue"
	"github.com/cairn-s3/cairn/internal/notify/service"
	"github.com/cairn-s3/cairn/internal/notify/topic"
	"github.com/cairn-s3/cairn/internal/objstore"
)

// maxFormBytes bounds an SNS request body.
const maxFormBytes = 1 << 20

// snsActions gives each SNS Action the API serves its authz action
// (GetTopic is RGW's extension, a read of the attributes). An Action
// missing here is answered InvalidAction before dispatch, so a case added
// to serveSNS without an entry cannot be reached (TestSNSActionsMapped).
var snsActions = map[string]authz.Action{
	"CreateTopic":        authz.SNSCreateTopic,
	"DeleteTopic":        authz.SNSDeleteTopic,
	"GetTopic":           authz.SNSGetTopicAttributes,
	"GetTopicAttributes": authz.SNSGetTopicAttributes,
	"ListTopics":         authz.SNSListTopics,
	"SetTopicAttributes": authz.SNSSetTopicAttributes,
}

// SNSAction returns the authz action of an SNS Action name; ok=false: the
// API does not serve it.
func SNSAction(name string) (authz.Action, bool) {
	a, ok := snsActions[name]
	return a, ok
}

// SNS returns the SNS query-API handler (s3api.Server.SetSNSHandler).
func (a *API) SNS() http.Handler { return http.HandlerFunc(a.serveSNS) }

func (a *API) serveSNS(w http.ResponseWriter, r *http.Request) {
	rid := requestID(r.Context())
	fail := func(e *topic.Error) {
		w.Header().Set("Content-Type", topic.ContentType)
		w.WriteHeader(e.HTTPStatus)
		_, _ = w.Write(topic.ErrorResponse(e, rid))
	}
	ok := func(body []byte) {
		w.Header().Set("Content-Type", topic.ContentType)
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(body)
	}
	caller, authed := a.opts.Caller(r.Context())
	if !authed {
		fail(&topic.Error{Code: topic.CodeAuthorization, Message: "the request is not authenticated", HTTPStatus: http.StatusForbidden})
		return
	}
	form, err := readForm(r)
	if err != nil {
		fail(&topic.Error{Code: topic.CodeInvalidArgument, Message: err.Error(), HTTPStatus: http.StatusBadRequest})
		return
	}
	tlsReq := r.TLS != nil
	topts := topic.Options{RequestTLS: tlsReq, AllowCleartextSecrets: a.opts.AllowCleartextSecrets}
	ctx := r.Context()

	// may is the topic access rule, decided by the one authorizer
	// (topic.MayAccess): owners and admins may, others what the topic's
	// Policy grants; an explicit Deny binds everyone.
	may := func(t *topic.Topic, action string) bool {
		return t.MayAccess(caller.principal(), caller.global(), action)
	}
	// topicArg resolves TopicArn to a topic the caller may use for action.
	topicArg := func(action string) (*topic.Topic, *topic.Error) {
		arn := form.Get("TopicArn")
		if arn == "" {
			return nil, &topic.Error{Code: topic.CodeInvalidArgument, Message: "missing TopicArn", HTTPStatus: http.StatusBadRequest}
		}
		pa, err := topic.ParseARN(arn)
		if err != nil {
			return nil, snsError(err)
		}
		t, err := a.svc.GetTopic(ctx, service.Ref(pa.Tenant, pa.Name))
		if err != nil {
			if errors.Is(err, service.ErrTopicNotFound) && pa.Tenant != caller.tenant() && !caller.Admin {
				// Another tenant's topic names are not told apart.
				return nil, snsError(service.ErrNotOwner)
			}
			if errors.Is(err, service.ErrTopicNotFound) {
				return nil, topic.NotFound(arn)
			}
			return nil, snsError(err)
		}
		if !may(t, action) {
			return nil, snsError(service.ErrNotOwner)
		}
		return t, nil
	}

	// serviceAllowed decides an action on no topic (CreateTopic,
	// ListTopics): an account's users need an identity Allow, the root
	// and users outside accounts may.
	serviceAllowed := func(act authz.Action) bool {
		cp := caller.principal()
		in := authz.Input{Request: authz.Request{Principal: cp, Action: act,
			Context: authz.GlobalContext(authz.WithPrincipalKeys(nil, cp), caller.global())}}
		return authz.Evaluate(&in).Allowed()
	}

	action := form.Get("Action")
	act, served := snsActions[action]
	switch {
	case action == "":
		fail(&topic.Error{Code: "MissingAction", Message: "missing Action", HTTPStatus: http.StatusBadRequest})
		return
	case !served:
		fail(&topic.Error{Code: "InvalidAction", Message: fmt.Sprintf("unsupported action %q", action), HTTPStatus: http.StatusBadRequest})
		return
	}
	switch action {
	case "CreateTopic":
		// An IAM account's user needs an identity policy for it (authz);
		// any other authenticated user may, as before.
		if !serviceAllowed(authz.SNSCreateTopic) {
			fail(snsError(service.ErrNotOwner))
			return
		}
		attrs := entries(form, "Attributes.entry")
		st, ignored, err := topic.Parse(attrs, topts)
		if err != nil {
			fail(snsError(err))
			return
		}
		if len(ignored) > 0 {
			a.log.Info("CreateTopic: ignoring attributes", "topic", form.Get("Name"), "attributes", ignored)
		}
		t, err := a.svc.CreateTopic(ctx, service.CreateTopicInput{Name: form.Get("Name"), Tenant: caller.tenant(), Owner: caller.owner(), Settings: st, AnyOwner: caller.Admin})
		if err != nil {
			fail(snsError(err))
			return
		}
		ok(topic.CreateTopicResponse(t.ARN, rid))
	case "GetTopicAttributes", "GetTopic":
		t, e := topicArg(act.String())
		if e != nil {
			fail(e)
			return
		}
		if t.Settings.HasSecret() && !tlsReq && !a.opts.AllowCleartextSecrets {
			fail(&topic.Error{Code: topic.CodeInvalidArgument, Message: "topic has credentials: ask over HTTPS", HTTPStatus: http.StatusBadRequest})
			return
		}
		if action == "GetTopic" {
			ok(topic.GetTopicResponse(t.ViewFor(caller.owner()), rid))
		} else {
			ok(topic.GetTopicAttributesResponse(t.ViewFor(caller.owner()), rid))
		}
	case "ListTopics":
		if !serviceAllowed(authz.SNSListTopics) {
			fail(snsError(service.ErrNotOwner))
			return
		}
		// Only the caller's topics and those whose Policy lets the caller
		// read them (as RGW); admins see every topic, redacted. Pages are
		// filled by reading on past what the caller may not see, and the
		// token names the last topic shown, never a hidden one.
		visible := func(t *topic.Topic) bool {
			// Topics holding credentials are listed only over TLS (their
			// endpoint address carries them). A tenant, or an account,
			// lists its own namespace only (RGW).
			return (caller.Admin || t.Tenant == caller.tenant()) && may(t, topic.ActionGetTopicAttributes) &&
				(!t.Settings.HasSecret() || tlsReq || a.opts.AllowCleartextSecrets)
		}
		shown, next, err := a.listVisible(ctx, form.Get("NextToken"), listTopicsPage, visible)
		if err != nil {
			fail(snsError(err))
			return
		}
		for i, t := range shown {
			shown[i] = t.ViewFor(caller.owner())
		}
		ok(topic.ListTopicsResponse(shown, next, rid))
	case "SetTopicAttributes":
		t, e := topicArg(act.String())
		if e != nil {
			fail(e)
			return
		}
		name := form.Get("AttributeName")
		if name == "" {
			fail(&topic.Error{Code: topic.CodeInvalidArgument, Message: "missing AttributeName", HTTPStatus: http.StatusBadRequest})
			return
		}
		// topicArg authorized the change; a grantee's is not the owner's.
		grantee := caller.Admin || t.Owner != caller.owner()
		if _, err := a.svc.SetTopicAttribute(ctx, service.Ref(t.Tenant, t.Name), caller.owner(), grantee, name, form.Get("AttributeValue"), topts); err != nil {
			fail(snsError(err))
			return
		}
		ok(topic.SetTopicAttributesResponse(rid))
	case "DeleteTopic":
		arn := form.Get("TopicArn")
		pa, err := topic.ParseARN(arn)
		if err != nil {
			fail(snsError(err))
			return
		}
		// Deleting a missing topic succeeds (and cleans up a queue left
		// behind); an existing one needs the owner or sns:DeleteTopic.
		ref := service.Ref(pa.Tenant, pa.Name)
		t, err := a.svc.GetTopic(ctx, ref)
		if err != nil && !errors.Is(err, service.ErrTopicNotFound) {
			fail(snsError(err))
			return
		}
		if t != nil && !may(t, act.String()) {
			fail(snsError(service.ErrNotOwner))
			return
		}
		grantee := caller.Admin || (t != nil && t.Owner != caller.owner())
		if t == nil && pa.Tenant != caller.tenant() && !caller.Admin {
			// Nothing to clean up in another tenant's namespace.
			fail(snsError(service.ErrNotOwner))
			return
		}
		if err := a.svc.DeleteTopic(ctx, ref, caller.owner(), grantee); err != nil {
			fail(snsError(err))
			return
		}
		ok(topic.DeleteTopicResponse(rid))
	default:
		// In snsActions but not served here: refuse, never guess.
		fail(&topic.Error{Code: "InternalFailure", Message: fmt.Sprintf("action %q has no handler", action), HTTPStatus: http.StatusInternalServerError})
	}
}

// listTopicsPage is ListTopics' page size (AWS: 100).
const listTopicsPage = 100

// listVisible returns up to max topics after marker for which visible
// holds, and the token of the next page ("" at the end): the queue name
// of the last topic returned.
func (a *API) listVisible(ctx context.Context, marker string, max int, visible func(*topic.Topic) bool) ([]*topic.Topic, string, error) {
	var out []*topic.Topic
	for {
		ts, more, err := a.svc.ListTopics(ctx, marker, max)
		if err != nil {
			return nil, "", err
		}
		for i, t := range ts {
			if !visible(t) {
				continue
			}
			out = append(out, t)
			if len(out) == max {
				if i == len(ts)-1 && more == "" {
					return out, "", nil
				}
				return out, queue.Name(t.Tenant, t.Name), nil
			}
		}
		if more == "" {
			return out, "", nil
		}
		marker = more
	}
}

// readForm reads the form-encoded body: the AWS query protocol over POST.
// The query string is ignored: the action and its target come from the
// body alone, which the server requires to be signed.
func readForm(r *http.Request) (url.Values, error) {
	form := url.Values{}
	if r.Method != http.MethodPost {
		return nil, errors.New("the SNS API takes a form-encoded POST")
	}
	if r.Body == nil {
		return form, nil
	}
	b, err := io.ReadAll(io.LimitReader(r.Body, maxFormBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading the request body: %v", err)
	}
	if len(b) > maxFormBytes {
		return nil, errors.New("request body too large")
	}
	body, err := url.ParseQuery(string(b))
	if err != nil {
		return nil, fmt.Errorf("malformed form body: %v", err)
	}
	for k, vs := range body {
		form[k] = append(form[k], vs...)
	}
	return form, nil
}

// entries decodes the query protocol's map encoding:
// prefix.N.key / prefix.N.value, N from 1.
func entries(form url.Values, prefix string) map[string]string {
	out := map[string]string{}
	for k, vs := range form {
		rest, ok := strings.CutPrefix(k, prefix+".")
		if !ok || len(vs) == 0 {
			continue
		}
		n, field, ok := strings.Cut(rest, ".")
		if !ok || field != "key" {
			continue
		}
		out[vs[0]] = form.Get(prefix + "." + n + ".value")
	}
	return out
}

func snsError(err error) *topic.Error {
	var te *topic.Error
	switch {
	case errors.As(err, &te):
		return te
	case errors.Is(err, service.ErrTopicNotFound):
		return &topic.Error{Code: topic.CodeNotFound, Message: err.Error(), HTTPStatus: http.StatusNotFound}
	case errors.Is(err, service.ErrNotOwner):
		return &topic.Error{Code: topic.CodeAuthorization, Message: err.Error(), HTTPStatus: http.StatusForbidden}
	case errors.Is(err, objstore.ErrInvalid):
		return &topic.Error{Code: topic.CodeInvalidArgument, Message: err.Error(), HTTPStatus: http.StatusBadRequest}
	}
	return &topic.Error{Code: topic.CodeInternal, Message: "internal error: " + err.Error(), HTTPStatus: http.StatusInternalServerError}
}
