// Package redact keeps credentials out of the log stream: a slog.Handler
// that rewrites every message, string attribute and error before the
// wrapped handler sees it. It is the safety net behind the rule that log
// calls never pass secrets; what it recognises is listed on String.
package redact

import (
	"context"
	"log/slog"
	"regexp"
	"strings"
)

// Mask replaces a secret.
const Mask = "REDACTED"

var (
	// scheme://user:password@ → scheme://user:REDACTED@ (push endpoints,
	// broker URLs). The password may hold anything but '@' and spaces.
	userinfoRE = regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.-]*://[^\s/@:]*:)[^\s@/]*@`)
	// key=value pairs (query strings, Authorization headers, form bodies)
	// whose key names a credential.
	paramRE = regexp.MustCompile(`(?i)((?:^|[?&;,\s"'])(?:x-amz-signature|x-amz-security-token|x-amz-(?:copy-source-)?server-side-encryption-customer-key|x-amz-credential|signature|awsaccesskeyid|access_token|token|password|passwd|pwd|secret|secret[-_]?key|secret[-_]?access[-_]?key|api[-_]?key|sig)=)[^&\s,;"']*`)
	// Authorization: <scheme> <credentials>
	authRE = regexp.MustCompile(`(?i)(authorization"?\s*[:=]\s*"?)(?:[A-Za-z0-9-]+ )?[^"\r\n]*`)
)

// String returns s with URL passwords, credential query/form parameters
// (token, password, secret, signature, X-Amz-Signature, ...) and
// Authorization header values replaced by Mask.
func String(s string) string {
	if !strings.ContainsAny(s, "@=:") {
		return s
	}
	if strings.Contains(s, "://") {
		s = userinfoRE.ReplaceAllString(s, "${1}"+Mask+"@")
	}
	if strings.Contains(s, "=") {
		s = paramRE.ReplaceAllString(s, "${1}"+Mask)
	}
	if strings.Contains(strings.ToLower(s), "authorization") {
		s = authRE.ReplaceAllString(s, "${1}"+Mask)
	}
	return s
}

// Handler wraps another slog.Handler, redacting as String does.
type Handler struct{ next slog.Handler }

// NewHandler returns h wrapped; a handler already wrapped is returned as is.
func NewHandler(h slog.Handler) slog.Handler {
	if _, ok := h.(*Handler); ok {
		return h
	}
	return &Handler{next: h}
}

// Logger returns l with its handler wrapped.
func Logger(l *slog.Logger) *slog.Logger { return slog.New(NewHandler(l.Handler())) }

func (h *Handler) Enabled(ctx context.Context, l slog.Level) bool { return h.next.Enabled(ctx, l) }

func (h *Handler) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, r.Level, String(r.Message), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(attr(a))
		return true
	})
	return h.next.Handle(ctx, out)
}

func (h *Handler) WithAttrs(as []slog.Attr) slog.Handler {
	clean := make([]slog.Attr, len(as))
	for i, a := range as {
		clean[i] = attr(a)
	}
	return &Handler{next: h.next.WithAttrs(clean)}
}

func (h *Handler) WithGroup(name string) slog.Handler { return &Handler{next: h.next.WithGroup(name)} }

func attr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, String(v.String()))
	case slog.KindGroup:
		g := v.Group()
		clean := make([]any, len(g))
		for i, ga := range g {
			clean[i] = attr(ga)
		}
		return slog.Group(a.Key, clean...)
	case slog.KindAny:
		switch x := v.Any().(type) {
		case error:
			return slog.String(a.Key, String(x.Error()))
		case []string:
			clean := make([]string, len(x))
			for i, s := range x {
				clean[i] = String(s)
			}
			return slog.Any(a.Key, clean)
		case interface{ String() string }:
			return slog.String(a.Key, String(x.String()))
		}
	}
	return slog.Attr{Key: a.Key, Value: v}
}
