package s3api

import (
	"encoding/xml"
	"net/http"
	"strconv"
	"strings"

	"github.com/cairn-s3/cairn/internal/authz"
	"github.com/cairn-s3/cairn/internal/driver"
	"github.com/cairn-s3/cairn/internal/s3err"
)

// GetObjectAttributes (GET /bucket/key?attributes): the attributes named
// in x-amz-object-attributes, from the object's head alone (no data read).

type getObjectAttributesResponse struct {
	XMLName      xml.Name              `xml:"GetObjectAttributesResponse"`
	Xmlns        string                `xml:"xmlns,attr"`
	ETag         string                `xml:"ETag,omitempty"`
	Checksum     *attributesChecksum   `xml:"Checksum,omitempty"`
	ObjectParts  *attributesObjectPart `xml:"ObjectParts,omitempty"`
	StorageClass string                `xml:"StorageClass,omitempty"`
	ObjectSize   *int64                `xml:"ObjectSize,omitempty"`
}

type attributesChecksum struct {
	checksumXML
	ChecksumType string `xml:"ChecksumType,omitempty"`
}

type attributesObjectPart struct {
	IsTruncated          bool             `xml:"IsTruncated"`
	MaxParts             int              `xml:"MaxParts"`
	NextPartNumberMarker int              `xml:"NextPartNumberMarker"`
	PartNumberMarker     int              `xml:"PartNumberMarker"`
	Parts                []attributesPart `xml:"Part"`
	PartsCount           int              `xml:"PartsCount"`
}

type attributesPart struct {
	checksumXML
	PartNumber int   `xml:"PartNumber"`
	Size       int64 `xml:"Size"`
}

// objectAttributes are the names S3 accepts in x-amz-object-attributes.
var objectAttributes = map[string]bool{"ETag": true, "Checksum": true, "ObjectParts": true, "StorageClass": true, "ObjectSize": true}

func (s *Server) getObjectAttributes(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
	want := map[string]bool{}
	for _, v := range r.Header.Values("X-Amz-Object-Attributes") {
		for a := range strings.SplitSeq(v, ",") {
			a = strings.TrimSpace(a)
			if a == "" {
				continue
			}
			if !objectAttributes[a] {
				return s3err.New(s3err.ErrInvalidArgument, "Invalid attribute name specified.")
			}
			want[a] = true
		}
	}
	if len(want) == 0 {
		return s3err.New(s3err.ErrInvalidArgument, "The x-amz-object-attributes header specifying the attributes to be retrieved is either missing or empty")
	}
	maxParts, err := headerInt(r, "x-amz-max-parts", maxListParts)
	if err != nil {
		return err
	}
	marker, err := headerInt(r, "x-amz-part-number-marker", 0)
	if err != nil {
		return err
	}
	sp, err := s.parseSSE(r, sseRead)
	if err != nil {
		return err
	}
	vid, err := s.versionParam(r.URL.Query())
	if err != nil {
		return err
	}
	info, err := s.headVersion(r.Context(), rc.bucket, rc.key, vid)
	if err != nil {
		markerHeaders(w.Header(), err)
		return err
	}
	if err := s.recheckObjectACL(r, rc, rc.act, info); err != nil {
		return err
	}
	if err := driver.CheckCustomerKey(info, sp.req.CustomerKey); err != nil {
		return err
	}
	// S3 wants the read permission as well: s3:GetObject, or
	// s3:GetObjectVersion for a version named by id.
	read := authz.S3GetObject
	if vid != "" {
		read = authz.S3GetObjectVersion
	}
	if err := s.decideObject(r, rc, read, info); err != nil {
		return err
	}
	setVersionHeader(w.Header(), info.VersionID)
	out := getObjectAttributesResponse{Xmlns: s3Namespace}
	if want["ETag"] {
		out.ETag = info.ETag // unquoted, as S3 sends it here
	}
	if want["Checksum"] && len(info.Meta.Checksums) > 0 {
		typ := info.Meta.ChecksumType
		if typ == "" {
			typ = "FULL_OBJECT" // a single-part object's checksum is of the whole data
		}
		out.Checksum = &attributesChecksum{checksumXML: newChecksumXML(info.Meta.Checksums), ChecksumType: typ}
	}
	if want["ObjectParts"] && info.Parts > 0 {
		out.ObjectParts = objectParts(info, marker, min(maxParts, maxListParts))
	}
	if want["StorageClass"] {
		out.StorageClass = storageClass(info.StorageClass)
	}
	if want["ObjectSize"] {
		out.ObjectSize = &info.Size
	}
	w.Header().Set("Last-Modified", info.ModTime.UTC().Format(http.TimeFormat))
	return writeXML(w, http.StatusOK, out)
}

// objectParts pages a multipart object's parts after marker.
func objectParts(info driver.ObjectInfo, marker, max int) *attributesObjectPart {
	op := &attributesObjectPart{MaxParts: max, PartNumberMarker: marker, PartsCount: info.Parts}
	alg := ""
	for a := range info.Meta.Checksums {
		alg = a
	}
	for i, size := range info.PartSizes {
		n := i + 1
		if n <= marker {
			continue
		}
		if len(op.Parts) == max {
			op.IsTruncated = true
			break
		}
		p := attributesPart{PartNumber: n, Size: size}
		if alg != "" && i < len(info.Meta.PartChecksums) {
			p.checksumXML = newChecksumXML(map[string]string{alg: info.Meta.PartChecksums[i]})
		}
		op.Parts = append(op.Parts, p)
		op.NextPartNumberMarker = n
	}
	return op
}

func headerInt(r *http.Request, name string, def int) (int, error) {
	v := r.Header.Get(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, s3err.New(s3err.ErrInvalidArgument, "Invalid %s header.", name)
	}
	return n, nil
}
