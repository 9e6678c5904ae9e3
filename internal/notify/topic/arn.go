package topic

import (
	"strings"
)

// DefaultZonegroup is the zonegroup in ARNs when none is configured, so
// clients can use arn:aws:sns:default::<topic> as with RGW.
const DefaultZonegroup = "default"

// MaxNameLen is AWS's topic name limit.
const MaxNameLen = 256

// ARN identifies a topic: arn:aws:sns:<zonegroup>:<tenant>:<name>.
type ARN struct {
	Zonegroup string
	Tenant    string // "" for the default tenant
	Name      string
}

func (a ARN) String() string {
	return "arn:aws:sns:" + a.Zonegroup + ":" + a.Tenant + ":" + a.Name
}

// ParseARN parses and validates a topic ARN. The partition must be "aws"
// and the service "sns"; the topic name must satisfy ValidateName.
func ParseARN(s string) (ARN, error) {
	parts := strings.Split(s, ":")
	if len(parts) != 6 || parts[0] != "arn" || parts[1] != "aws" || parts[2] != "sns" {
		return ARN{}, invalid("invalid topic ARN %q: want arn:aws:sns:<zonegroup>:<tenant>:<topic>", s)
	}
	a := ARN{Zonegroup: parts[3], Tenant: parts[4], Name: parts[5]}
	if err := ValidateName(a.Name); err != nil {
		return ARN{}, err
	}
	if a.Tenant != "" && ValidateName(a.Tenant) != nil { // a tenant's characters are a subset of a name's
		return ARN{}, invalid("invalid topic ARN %q: bad tenant", s)
	}
	return a, nil
}

// ValidateName checks a topic name: 1–256 characters from [A-Za-z0-9_-].
// AWS also allows a ".fifo" suffix; Cairn does not accept '.' at all,
// because queue shard i of topic T is named "T.i" and a dotted topic name
// could collide with another topic's shard.
func ValidateName(name string) error {
	if name == "" || len(name) > MaxNameLen {
		return invalid("topic name must be 1 to %d characters", MaxNameLen)
	}
	for _, c := range name {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '_':
		default:
			return invalid("invalid character %q in topic name %q: use letters, digits, '-' and '_'", c, name)
		}
	}
	return nil
}
