package topic

import (
	"net"
	"net/url"
	"strconv"
	"strings"
)

// Schemes of push endpoints.
const (
	SchemeHTTP  = "http"
	SchemeHTTPS = "https"
	SchemeAMQP  = "amqp"
	SchemeAMQPS = "amqps"
	SchemeKafka = "kafka"
)

// EndpointURL is a parsed push-endpoint.
//
//	http[s]://host[:port][/path]
//	amqp[s]://[user:password@]host[:port][/vhost]   (default port 5672 / 5671, vhost "/")
//	kafka://[user:password@]host[:port][,host[:port]...]   (default port 9092)
type EndpointURL struct {
	Raw      string
	Scheme   string
	User     string
	Password string
	// Addrs are host:port pairs with default ports filled in. Only Kafka
	// accepts more than one (a bootstrap list).
	Addrs []string
	// Path is the HTTP path (with query) or, for AMQP, the vhost
	// ("/" when absent).
	Path string
}

// HasSecret reports whether the URL carries a password.
func (u *EndpointURL) HasSecret() bool { return u.Password != "" }

// TLS reports whether the scheme itself implies TLS (https, amqps). Kafka
// uses TLS when the topic's use-ssl attribute is set.
func (u *EndpointURL) TLS() bool { return u.Scheme == SchemeHTTPS || u.Scheme == SchemeAMQPS }

// Redacted is the URL with the password and every query value replaced
// ("xxxxx"), for logs, listings and anyone but the topic's owner: a
// webhook's query often carries its token.
func (u *EndpointURL) Redacted() string { return redactEndpoint(u.Raw) }

func redactEndpoint(raw string) string {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return "xxxxx"
	}
	authority, tail := rest, ""
	if i := strings.IndexAny(rest, "/?"); i >= 0 {
		authority, tail = rest[:i], rest[i:]
	}
	if at := strings.LastIndex(authority, "@"); at >= 0 {
		user, _, hasPw := strings.Cut(authority[:at], ":")
		if hasPw {
			user += ":xxxxx"
		}
		authority = user + "@" + authority[at+1:]
	}
	if p, q, ok := strings.Cut(tail, "?"); ok {
		kvs := strings.Split(q, "&")
		for i, kv := range kvs {
			if k, _, ok := strings.Cut(kv, "="); ok {
				kvs[i] = k + "=xxxxx"
			}
		}
		tail = p + "?" + strings.Join(kvs, "&")
	}
	return scheme + "://" + authority + tail
}

// ParseEndpoint parses a push-endpoint URL.
func ParseEndpoint(raw string) (*EndpointURL, error) {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return nil, invalid("push-endpoint: missing scheme (http, https, amqp, amqps, kafka)")
	}
	scheme = strings.ToLower(scheme)
	u := &EndpointURL{Raw: raw, Scheme: scheme}
	var defPort int
	switch scheme {
	case SchemeHTTP:
		defPort = 80
	case SchemeHTTPS:
		defPort = 443
	case SchemeAMQP:
		defPort = 5672
	case SchemeAMQPS:
		defPort = 5671
	case SchemeKafka:
		defPort = 9092
	default:
		return nil, invalid("push-endpoint: unsupported scheme %q (http, https, amqp, amqps, kafka)", scheme)
	}
	// Split authority from path ourselves: url.Parse rejects Kafka's
	// comma-separated host list.
	authority, path := rest, ""
	if i := strings.IndexAny(rest, "/?"); i >= 0 {
		authority, path = rest[:i], rest[i:]
	}
	// An '@' after the host means a '/' or '?' in the user info was not
	// percent-encoded: parsing on would take part of the password for the
	// host (and echo it in errors), so refuse the whole URL.
	if strings.Contains(path, "@") {
		return nil, invalid("push-endpoint: malformed URL: '@' after the host; percent-encode '/', '?', '#' and '@' in user names, passwords and paths (%%2F, %%3F, %%23, %%40)")
	}
	if at := strings.LastIndex(authority, "@"); at >= 0 {
		info := authority[:at]
		authority = authority[at+1:]
		user, pw, _ := strings.Cut(info, ":")
		var err error
		if u.User, err = url.PathUnescape(user); err != nil {
			return nil, invalid("push-endpoint: bad user name encoding")
		}
		if u.Password, err = url.PathUnescape(pw); err != nil {
			return nil, invalid("push-endpoint: bad password encoding")
		}
		if u.User == "" {
			return nil, invalid("push-endpoint: empty user name")
		}
		if scheme == SchemeHTTP || scheme == SchemeHTTPS {
			return nil, invalid("push-endpoint: credentials in http(s) URLs are not supported")
		}
	}
	hosts := strings.Split(authority, ",")
	if len(hosts) > 1 && scheme != SchemeKafka {
		return nil, invalid("push-endpoint %s: only kafka accepts several hosts", u.Redacted())
	}
	for _, h := range hosts {
		addr, err := hostPort(h, defPort)
		if err != nil {
			return nil, invalid("push-endpoint %s: %s", u.Redacted(), err.Message)
		}
		u.Addrs = append(u.Addrs, addr)
	}
	switch scheme {
	case SchemeAMQP, SchemeAMQPS:
		if strings.Contains(path, "?") {
			return nil, invalid("push-endpoint: amqp URLs take no query")
		}
		vhost := strings.TrimPrefix(path, "/")
		if vhost == "" {
			vhost = "/"
		} else if v, err := url.PathUnescape(vhost); err == nil {
			vhost = v
		} else {
			return nil, invalid("push-endpoint: bad vhost encoding")
		}
		u.Path = vhost
	case SchemeKafka:
		if path != "" && path != "/" {
			return nil, invalid("push-endpoint: kafka URLs take no path")
		}
	default:
		if path == "" {
			path = "/"
		}
		u.Path = path
	}
	return u, nil
}

func hostPort(h string, defPort int) (string, *Error) {
	if h == "" {
		return "", invalid("missing host")
	}
	host, port := h, ""
	if strings.HasPrefix(h, "[") || strings.Count(h, ":") == 1 {
		if hh, pp, err := net.SplitHostPort(h); err == nil {
			host, port = hh, pp
		} else if !strings.HasPrefix(h, "[") || !strings.HasSuffix(h, "]") {
			return "", invalid("bad host %q", h)
		} else {
			host = strings.Trim(h, "[]")
		}
	}
	if host == "" {
		return "", invalid("missing host")
	}
	p := defPort
	if port != "" {
		n, err := strconv.Atoi(port)
		if err != nil || n < 1 || n > 65535 {
			return "", invalid("bad port %q", port)
		}
		p = n
	}
	return net.JoinHostPort(host, strconv.Itoa(p)), nil
}
