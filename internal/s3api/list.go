package s3api

import (
	"encoding/base64"
	"encoding/xml"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/cairn-s3/cairn/internal/driver"
	"github.com/cairn-s3/cairn/internal/s3err"
)

const maxListKeys = 1000

type listBucketResultV1 struct {
	XMLName        xml.Name       `xml:"ListBucketResult"`
	Xmlns          string         `xml:"xmlns,attr"`
	Name           string         `xml:"Name"`
	Prefix         string         `xml:"Prefix"`
	Marker         string         `xml:"Marker"`
	NextMarker     string         `xml:"NextMarker,omitempty"`
	MaxKeys        int            `xml:"MaxKeys"`
	Delimiter      string         `xml:"Delimiter,omitempty"`
	EncodingType   string         `xml:"EncodingType,omitempty"`
	IsTruncated    bool           `xml:"IsTruncated"`
	Contents       []objectXML    `xml:"Contents"`
	CommonPrefixes []commonPrefix `xml:"CommonPrefixes"`
}

type listBucketResultV2 struct {
	XMLName               xml.Name       `xml:"ListBucketResult"`
	Xmlns                 string         `xml:"xmlns,attr"`
	Name                  string         `xml:"Name"`
	Prefix                string         `xml:"Prefix"`
	StartAfter            string         `xml:"StartAfter,omitempty"`
	ContinuationToken     string         `xml:"ContinuationToken,omitempty"`
	NextContinuationToken string         `xml:"NextContinuationToken,omitempty"`
	KeyCount              int            `xml:"KeyCount"`
	MaxKeys               int            `xml:"MaxKeys"`
	Delimiter             string         `xml:"Delimiter,omitempty"`
	EncodingType          string         `xml:"EncodingType,omitempty"`
	IsTruncated           bool           `xml:"IsTruncated"`
	Contents              []objectXML    `xml:"Contents"`
	CommonPrefixes        []commonPrefix `xml:"CommonPrefixes"`
}

type objectXML struct {
	Key          string `xml:"Key"`
	LastModified string `xml:"LastModified"`
	ETag         string `xml:"ETag"`
	Size         int64  `xml:"Size"`
	StorageClass string `xml:"StorageClass"`
	Owner        *owner `xml:"Owner,omitempty"`
}

type commonPrefix struct {
	Prefix string `xml:"Prefix"`
}

// listParams are the parameters shared by both listing versions.
type listParams struct {
	prefix, delimiter string
	maxKeys           int
	enc               encoder
}

func parseListParams(q url.Values) (listParams, error) {
	p := listParams{prefix: q.Get("prefix"), delimiter: q.Get("delimiter"), maxKeys: maxListKeys}
	// RGW's allow-unordered=true lists shard by shard; a delimiter would
	// need the global order, so RGW refuses the combination.
	if strings.EqualFold(q.Get("allow-unordered"), "true") && p.delimiter != "" {
		return p, s3err.New(s3err.ErrInvalidArgument, "Unordered list requests may not specify a delimiter.")
	}
	var err error
	if p.enc, err = newEncoder(q); err != nil {
		return p, err
	}
	if q.Has("max-keys") {
		n, err := strconv.Atoi(q.Get("max-keys"))
		if err != nil || n < 0 {
			return p, s3err.New(s3err.ErrInvalidArgument, "Provided max-keys not an integer or within integer range")
		}
		p.maxKeys = min(n, maxListKeys)
	}
	return p, nil
}

// list runs one backend page; max-keys=0 answers empty without asking.
func (s *Server) list(r *http.Request, bucket string, p listParams, after string) (driver.ListObjectsResult, error) {
	if p.maxKeys == 0 {
		return driver.ListObjectsResult{}, nil
	}
	return s.be.ListObjects(r.Context(), driver.ListObjectsInput{
		Bucket:     bucket,
		Prefix:     p.prefix,
		Delimiter:  p.delimiter,
		StartAfter: after,
		MaxKeys:    p.maxKeys,
	})
}

// ownerCache resolves object owners to Owner elements once per listing.
type ownerCache struct {
	s     *Server
	r     *http.Request
	names map[string]string
}

func (c *ownerCache) owner(id string) *owner {
	if c.names == nil {
		c.names = map[string]string{}
	}
	name, ok := c.names[id]
	if !ok {
		name = id
		if u, err := c.s.be.GetUser(c.r.Context(), id); err == nil {
			name = displayName(u)
		}
		c.names[id] = name
	}
	return &owner{ID: id, DisplayName: name}
}

func (s *Server) contents(r *http.Request, res driver.ListObjectsResult, enc encoder, withOwner bool) ([]objectXML, []commonPrefix) {
	objs := make([]objectXML, 0, len(res.Objects))
	oc := &ownerCache{s: s, r: r}
	for _, o := range res.Objects {
		x := objectXML{
			Key:          enc.enc(o.Key),
			LastModified: s3Time(o.ModTime),
			ETag:         quoteETag(o.ETag),
			Size:         o.Size,
			StorageClass: storageClass(o.StorageClass),
		}
		if withOwner {
			x.Owner = oc.owner(o.Owner)
		}
		objs = append(objs, x)
	}
	var cps []commonPrefix
	for _, p := range res.CommonPrefixes {
		cps = append(cps, commonPrefix{Prefix: enc.enc(p)})
	}
	return objs, cps
}

func (s *Server) listObjectsV1(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
	q := r.URL.Query()
	p, err := parseListParams(q)
	if err != nil {
		return err
	}
	marker := q.Get("marker")
	res, err := s.list(r, rc.bucket, p, marker)
	if err != nil {
		return err
	}
	out := listBucketResultV1{
		Xmlns:        s3Namespace,
		Name:         rc.bucketName,
		Prefix:       p.prefix, // as sent, like RGW (v2 encodes it, as AWS)
		Marker:       p.enc.enc(marker),
		MaxKeys:      p.maxKeys,
		Delimiter:    p.enc.enc(p.delimiter), // AWS encodes it under encoding-type=url
		EncodingType: p.enc.typ(),
		IsTruncated:  res.IsTruncated,
	}
	// V1 always lists owners. NextMarker is sent only with a delimiter, as
	// S3 does; without one clients continue from the last key.
	out.Contents, out.CommonPrefixes = s.contents(r, res, p.enc, true)
	if res.IsTruncated && p.delimiter != "" {
		out.NextMarker = p.enc.enc(nextMarker(res))
	}
	return writeXMLBytes(w, http.StatusOK, marshalListV1(&out))
}

// Continuation tokens are opaque to clients: base64url of the key to
// continue after.
func encodeToken(key string) string { return base64.RawURLEncoding.EncodeToString([]byte(key)) }

func decodeToken(tok string) (string, error) {
	b, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil || tok == "" {
		return "", s3err.New(s3err.ErrInvalidArgument, "The continuation token provided is incorrect")
	}
	return string(b), nil
}

func (s *Server) listObjectsV2(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
	q := r.URL.Query()
	p, err := parseListParams(q)
	if err != nil {
		return err
	}
	startAfter, token := q.Get("start-after"), q.Get("continuation-token")
	after := startAfter
	if token != "" { // an empty token is no token (AWS, RGW)
		if after, err = decodeToken(token); err != nil {
			return err
		}
	}
	res, err := s.list(r, rc.bucket, p, after)
	if err != nil {
		return err
	}
	out := listBucketResultV2{
		Xmlns:             s3Namespace,
		Name:              rc.bucketName,
		Prefix:            p.enc.enc(p.prefix),
		StartAfter:        p.enc.enc(startAfter),
		ContinuationToken: token,
		MaxKeys:           p.maxKeys,
		Delimiter:         p.enc.enc(p.delimiter), // AWS encodes it under encoding-type=url
		EncodingType:      p.enc.typ(),
		IsTruncated:       res.IsTruncated,
		KeyCount:          len(res.Objects) + len(res.CommonPrefixes),
	}
	out.Contents, out.CommonPrefixes = s.contents(r, res, p.enc, q.Get("fetch-owner") == "true")
	if res.IsTruncated {
		out.NextContinuationToken = encodeToken(nextMarker(res))
	}
	return writeXMLBytes(w, http.StatusOK, marshalListV2(&out))
}

// nextMarker is where the next page starts: the backend's NextMarker, or
// the greatest key or prefix of this page if it left it empty.
func nextMarker(res driver.ListObjectsResult) string {
	if res.NextMarker != "" {
		return res.NextMarker
	}
	m := ""
	if n := len(res.Objects); n > 0 {
		m = res.Objects[n-1].Key
	}
	if n := len(res.CommonPrefixes); n > 0 && res.CommonPrefixes[n-1] > m {
		m = res.CommonPrefixes[n-1]
	}
	return m
}
