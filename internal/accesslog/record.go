package accesslog

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Record is one request as bucket logging reports it: the fields of AWS's
// server access log format, in its order, plus the ETag RGW's journal
// records carry. Zero values print as "-".
type Record struct {
	BucketOwner    string
	Bucket         string
	Time           time.Time
	RemoteIP       string
	Requester      string // canonical user id; "" anonymous
	RequestID      string
	Operation      string // e.g. REST.PUT.OBJECT
	Key            string // raw; printed URL-encoded
	RequestURI     string // "METHOD /path?query HTTP/1.1", printed quoted
	HTTPStatus     int
	ErrorCode      string
	BytesSent      int64
	ObjectSize     int64
	TotalTime      time.Duration // first byte in to last byte out
	TurnAroundTime time.Duration // last byte in to first byte out
	Referer        string
	UserAgent      string
	VersionID      string
	HostID         string
	SigVersion     string // SigV2 | SigV4
	CipherSuite    string
	AuthType       string // AuthHeader | QueryString
	HostHeader     string
	TLSVersion     string // TLSv1.2 | TLSv1.3
	AccessPointARN string
	ACLRequired    bool
	// ETag is the journal record's last field (RGW).
	ETag string
}

// TimeLayout is the record time format: [06/Feb/2019:00:00:38 +0000].
const TimeLayout = "02/Jan/2006:15:04:05 -0700"

// AppendStandard appends r as one AWS server access log line with its
// newline.
func AppendStandard(b []byte, r *Record) []byte {
	b = appendField(b, r.BucketOwner)
	b = append(b, ' ')
	b = appendField(b, r.Bucket)
	b = append(b, " ["...)
	b = r.Time.UTC().AppendFormat(b, TimeLayout)
	b = append(b, "] "...)
	b = appendField(b, r.RemoteIP)
	b = append(b, ' ')
	b = appendField(b, r.Requester)
	b = append(b, ' ')
	b = appendField(b, r.RequestID)
	b = append(b, ' ')
	b = appendField(b, r.Operation)
	b = append(b, ' ')
	b = appendField(b, encodeKey(r.Key))
	b = append(b, ' ')
	b = appendQuoted(b, r.RequestURI)
	b = append(b, ' ')
	b = appendInt(b, int64(r.HTTPStatus))
	b = append(b, ' ')
	b = appendField(b, r.ErrorCode)
	b = append(b, ' ')
	b = appendInt(b, r.BytesSent)
	b = append(b, ' ')
	b = appendInt(b, r.ObjectSize)
	b = append(b, ' ')
	b = appendMillis(b, r.TotalTime)
	b = append(b, ' ')
	b = appendMillis(b, r.TurnAroundTime)
	b = append(b, ' ')
	b = appendQuoted(b, r.Referer)
	b = append(b, ' ')
	b = appendQuoted(b, r.UserAgent)
	b = append(b, ' ')
	b = appendField(b, r.VersionID)
	b = append(b, ' ')
	b = appendField(b, r.HostID)
	b = append(b, ' ')
	b = appendField(b, r.SigVersion)
	b = append(b, ' ')
	b = appendField(b, r.CipherSuite)
	b = append(b, ' ')
	b = appendField(b, r.AuthType)
	b = append(b, ' ')
	b = appendField(b, r.HostHeader)
	b = append(b, ' ')
	b = appendField(b, r.TLSVersion)
	b = append(b, ' ')
	b = appendField(b, r.AccessPointARN)
	b = append(b, ' ')
	if r.ACLRequired {
		b = append(b, "Yes"...)
	} else {
		b = append(b, '-')
	}
	return append(b, '\n')
}

// AppendJournal appends r as one RGW journal line: bucket owner, bucket,
// [time], operation, key, object size, version id, ETag.
func AppendJournal(b []byte, r *Record) []byte {
	b = appendField(b, r.BucketOwner)
	b = append(b, ' ')
	b = appendField(b, r.Bucket)
	b = append(b, " ["...)
	b = r.Time.UTC().AppendFormat(b, TimeLayout)
	b = append(b, "] "...)
	b = appendField(b, r.Operation)
	b = append(b, ' ')
	b = appendField(b, encodeKey(r.Key))
	b = append(b, ' ')
	b = appendInt(b, r.ObjectSize)
	b = append(b, ' ')
	b = appendField(b, r.VersionID)
	b = append(b, ' ')
	b = appendField(b, strings.Trim(r.ETag, `"`))
	return append(b, '\n')
}

// encodeKey URL-encodes a key as AWS logs it ("/" kept).
func encodeKey(k string) string {
	if k == "" {
		return ""
	}
	return strings.ReplaceAll(url.PathEscape(k), "%2F", "/")
}

// appendField appends s, or "-" when empty. Fields never hold spaces or
// control characters (ids, codes, encoded keys), but a stray one is
// replaced so a record stays one line of space-separated fields.
func appendField(b []byte, s string) []byte {
	if s == "" {
		return append(b, '-')
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c == 0x7f {
			c = '_'
		}
		b = append(b, c)
	}
	return b
}

// appendQuoted appends "s" ("-" unquoted when empty) with quotes,
// backslashes and control characters escaped.
func appendQuoted(b []byte, s string) []byte {
	if s == "" {
		return append(b, '-')
	}
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c < ' ' || c == 0x7f:
			b = fmt.Appendf(b, `\x%02x`, c)
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}

func appendInt(b []byte, n int64) []byte {
	if n <= 0 {
		return append(b, '-')
	}
	return strconv.AppendInt(b, n, 10)
}

func appendMillis(b []byte, d time.Duration) []byte {
	if d < 0 {
		return append(b, '-')
	}
	return strconv.AppendInt(b, d.Milliseconds(), 10)
}

// StandardFields is the number of fields of a standard record.
const StandardFields = 26

// SplitFields splits one record line into its fields: quoted fields lose
// their quotes and escapes, the time its brackets. For tests and tools
// that read log objects.
func SplitFields(line string) ([]string, error) {
	var out []string
	for i := 0; i < len(line); {
		switch line[i] {
		case ' ':
			i++
		case '[':
			j := strings.IndexByte(line[i:], ']')
			if j < 0 {
				return nil, errors.New("accesslog: unterminated [time]")
			}
			out = append(out, line[i+1:i+j])
			i += j + 1
		case '"':
			var sb strings.Builder
			j := i + 1
			for ; j < len(line) && line[j] != '"'; j++ {
				if line[j] == '\\' && j+1 < len(line) {
					j++
					if line[j] == 'x' && j+2 < len(line) {
						v, err := strconv.ParseUint(line[j+1:j+3], 16, 8)
						if err != nil {
							return nil, err
						}
						sb.WriteByte(byte(v))
						j += 2
						continue
					}
				}
				sb.WriteByte(line[j])
			}
			if j >= len(line) {
				return nil, errors.New("accesslog: unterminated quoted field")
			}
			out = append(out, sb.String())
			i = j + 1
		default:
			j := strings.IndexByte(line[i:], ' ')
			if j < 0 {
				j = len(line) - i
			}
			out = append(out, line[i:i+j])
			i += j
		}
	}
	return out, nil
}
