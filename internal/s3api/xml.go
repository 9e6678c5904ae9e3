package s3api

import (
	"encoding/xml"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/cairn-s3/cairn/internal/s3err"
)

const s3Namespace = "http://s3.amazonaws.com/doc/2006-03-01/"

// Request-body limits for the XML documents we parse: generous for the
// largest valid document (1000 keys of 1 KiB; 10000 parts), small enough
// that a hostile body cannot exhaust memory.
const (
	maxSmallXML    = 64 << 10
	maxDeleteXML   = 2 << 20
	maxCompleteXML = 4 << 20
)

// s3Time formats t the way S3 XML bodies carry timestamps.
func s3Time(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// httpTime formats t for Last-Modified and friends.
func httpTime(t time.Time) string { return t.UTC().Format(http.TimeFormat) }

func quoteETag(etag string) string { return `"` + etag + `"` }

// writeXML writes v as a 200 (or status) XML response.
func writeXML(w http.ResponseWriter, status int, v any) error {
	out, err := xml.Marshal(v)
	if err != nil {
		return err
	}
	h := w.Header()
	h.Set("Content-Type", "application/xml")
	h.Set("Content-Length", strconv.Itoa(len(xml.Header)+len(out)))
	w.WriteHeader(status)
	_, _ = io.WriteString(w, xml.Header)
	_, _ = w.Write(out)
	return nil
}

// readXML decodes an XML request body of at most limit bytes into v.
// Malformed, oversized or mistyped documents are MalformedXML; a read error
// from the body (e.g. a failed signature or checksum) is returned as is.
func readXML(body io.Reader, limit int64, v any) error {
	data, err := readAllLimited(body, limit)
	if err != nil {
		return err
	}
	return decodeXML(data, v)
}

// readAllLimited reads a small request document; more than limit bytes is
// MalformedXML.
func readAllLimited(body io.Reader, limit int64) ([]byte, error) {
	if body == nil {
		return nil, nil
	}
	data, err := io.ReadAll(io.LimitReader(body, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, s3err.New(s3err.ErrMalformedXML, "The XML you provided was larger than the maximum allowed.")
	}
	return data, nil
}

// decodeXML is the pure parsing step of readXML (fuzzed).
func decodeXML(data []byte, v any) error {
	if len(data) == 0 {
		return s3err.New(s3err.ErrMalformedXML, "")
	}
	if err := xml.Unmarshal(data, v); err != nil {
		return s3err.Wrap(s3err.ErrMalformedXML, err)
	}
	return nil
}

// encoder applies encoding-type=url to keys and prefixes in listings.
type encoder bool

func newEncoder(q url.Values) (encoder, error) {
	if !q.Has("encoding-type") {
		return false, nil
	}
	switch q.Get("encoding-type") {
	case "url":
		return true, nil
	}
	return false, s3err.New(s3err.ErrInvalidEncodingType, "")
}

func (e encoder) enc(s string) string {
	if !e || s == "" {
		return s
	}
	return encodeURLKey(s)
}

// encodeURLKey is S3's encoding-type=url: every byte but the unreserved
// ones and "/" percent-encoded, so space is %20 and "+" is %2B (decoders
// that treat "+" as space, like botocore's, and those that do not agree).
func encodeURLKey(s string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("-_.~/", c) >= 0 {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&15])
	}
	return b.String()
}

func (e encoder) typ() string {
	if e {
		return "url"
	}
	return ""
}

// owner is the Owner/Initiator element.
type owner struct {
	ID          string `xml:"ID"`
	DisplayName string `xml:"DisplayName"`
}

// checksumXML carries the Checksum* elements of results and parts.
type checksumXML struct {
	ChecksumCRC32     string `xml:"ChecksumCRC32,omitempty"`
	ChecksumCRC32C    string `xml:"ChecksumCRC32C,omitempty"`
	ChecksumCRC64NVME string `xml:"ChecksumCRC64NVME,omitempty"`
	ChecksumSHA1      string `xml:"ChecksumSHA1,omitempty"`
	ChecksumSHA256    string `xml:"ChecksumSHA256,omitempty"`
}

func newChecksumXML(m map[string]string) checksumXML {
	return checksumXML{
		ChecksumCRC32:     m["CRC32"],
		ChecksumCRC32C:    m["CRC32C"],
		ChecksumCRC64NVME: m["CRC64NVME"],
		ChecksumSHA1:      m["SHA1"],
		ChecksumSHA256:    m["SHA256"],
	}
}

func (c checksumXML) toMap() map[string]string {
	m := map[string]string{}
	for alg, v := range map[string]string{
		"CRC32": c.ChecksumCRC32, "CRC32C": c.ChecksumCRC32C, "CRC64NVME": c.ChecksumCRC64NVME,
		"SHA1": c.ChecksumSHA1, "SHA256": c.ChecksumSHA256,
	} {
		if v != "" {
			m[alg] = v
		}
	}
	if len(m) == 0 {
		return nil
	}
	return m
}
