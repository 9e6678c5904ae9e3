package topic

import "strings"

// EndpointKey names the topic's destination without credentials
// ("scheme://host:port[,host:port]/path"), for logs and per-endpoint
// accounting; "unparsed-endpoint" when it does not parse.
func (s *Settings) EndpointKey() string {
	u, err := s.Endpoint()
	if err != nil || u == nil {
		return "unparsed-endpoint"
	}
	return u.Scheme + "://" + strings.Join(u.Addrs, ",") + u.Path
}
