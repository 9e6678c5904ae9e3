package s3api

import (
	"encoding/xml"
	"io"
	"net/http"
	"strconv"
	"unicode/utf8"
)

// The listing responses are written by hand: encoding/xml's reflection was
// ~23 % of the CPU of a 1,000-key ListObjectsV2 page through the handler
// (issue 24). The output is byte for byte what xml.Marshal writes for the
// same structs (TestListXMLGolden holds it to that, hostile keys included).

// xmlBuf appends XML elements with encoding/xml's escaping.
type xmlBuf []byte

// text appends s escaped as xml.Marshal escapes character data and
// attribute values: " ' & < > tab, LF and CR as character references,
// characters outside XML's range and invalid UTF-8 as U+FFFD.
func (b *xmlBuf) text(s string) {
	last := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c < utf8.RuneSelf && c != '"' && c != '\'' && c != '&' && c != '<' && c != '>' {
			i++
			continue
		}
		r, width := rune(c), 1
		if c >= utf8.RuneSelf {
			r, width = utf8.DecodeRuneInString(s[i:])
		}
		var esc string
		switch r {
		case '"':
			esc = "&#34;"
		case '\'':
			esc = "&#39;"
		case '&':
			esc = "&amp;"
		case '<':
			esc = "&lt;"
		case '>':
			esc = "&gt;"
		case '\t':
			esc = "&#x9;"
		case '\n':
			esc = "&#xA;"
		case '\r':
			esc = "&#xD;"
		default:
			if !xmlChar(r) || (r == utf8.RuneError && width == 1) {
				esc = "\uFFFD"
				break
			}
			i += width
			continue
		}
		*b = append(*b, s[last:i]...)
		*b = append(*b, esc...)
		i += width
		last = i
	}
	*b = append(*b, s[last:]...)
}

// xmlChar is XML 1.0's Char production, as encoding/xml checks it.
func xmlChar(r rune) bool {
	return r == 0x09 || r == 0x0A || r == 0x0D ||
		r >= 0x20 && r <= 0xD7FF || r >= 0xE000 && r <= 0xFFFD || r >= 0x10000 && r <= 0x10FFFF
}

func (b *xmlBuf) open(name string) {
	*b = append(*b, '<')
	*b = append(*b, name...)
	*b = append(*b, '>')
}

func (b *xmlBuf) close(name string) {
	*b = append(*b, "</"...)
	*b = append(*b, name...)
	*b = append(*b, '>')
}

func (b *xmlBuf) elem(name, v string) {
	b.open(name)
	b.text(v)
	b.close(name)
}

// elemOmit is elem for an omitempty field.
func (b *xmlBuf) elemOmit(name, v string) {
	if v != "" {
		b.elem(name, v)
	}
}

func (b *xmlBuf) elemInt(name string, v int64) {
	b.open(name)
	*b = strconv.AppendInt(*b, v, 10)
	b.close(name)
}

func (b *xmlBuf) elemBool(name string, v bool) {
	b.open(name)
	*b = strconv.AppendBool(*b, v)
	b.close(name)
}

func (b *xmlBuf) root(name, xmlns string) {
	*b = append(*b, '<')
	*b = append(*b, name...)
	*b = append(*b, ` xmlns="`...)
	b.text(xmlns)
	*b = append(*b, `">`...)
}

func (b *xmlBuf) contents(objs []objectXML, cps []commonPrefix) {
	for i := range objs {
		o := &objs[i]
		b.open("Contents")
		b.elem("Key", o.Key)
		b.elem("LastModified", o.LastModified)
		b.elem("ETag", o.ETag)
		b.elemInt("Size", o.Size)
		b.elem("StorageClass", o.StorageClass)
		if o.Owner != nil {
			b.open("Owner")
			b.elem("ID", o.Owner.ID)
			b.elem("DisplayName", o.Owner.DisplayName)
			b.close("Owner")
		}
		b.close("Contents")
	}
	for _, p := range cps {
		b.open("CommonPrefixes")
		b.elem("Prefix", p.Prefix)
		b.close("CommonPrefixes")
	}
}

// listBufSize is a page's size unless escaping expands it.
func listBufSize(objs []objectXML, cps []commonPrefix) int {
	n := 512
	for i := range objs {
		o := &objs[i]
		n += 180 + len(o.Key) + len(o.ETag) + len(o.LastModified) + len(o.StorageClass)
		if o.Owner != nil {
			n += 64 + len(o.Owner.ID) + len(o.Owner.DisplayName)
		}
	}
	for _, p := range cps {
		n += 48 + len(p.Prefix)
	}
	return n
}

// marshalListV1 is xml.Marshal(v).
func marshalListV1(v *listBucketResultV1) []byte {
	b := make(xmlBuf, 0, listBufSize(v.Contents, v.CommonPrefixes))
	b.root("ListBucketResult", v.Xmlns)
	b.elem("Name", v.Name)
	b.elem("Prefix", v.Prefix)
	b.elem("Marker", v.Marker)
	b.elemOmit("NextMarker", v.NextMarker)
	b.elemInt("MaxKeys", int64(v.MaxKeys))
	b.elemOmit("Delimiter", v.Delimiter)
	b.elemOmit("EncodingType", v.EncodingType)
	b.elemBool("IsTruncated", v.IsTruncated)
	b.contents(v.Contents, v.CommonPrefixes)
	b.close("ListBucketResult")
	return b
}

// marshalListV2 is xml.Marshal(v).
func marshalListV2(v *listBucketResultV2) []byte {
	b := make(xmlBuf, 0, listBufSize(v.Contents, v.CommonPrefixes))
	b.root("ListBucketResult", v.Xmlns)
	b.elem("Name", v.Name)
	b.elem("Prefix", v.Prefix)
	b.elemOmit("StartAfter", v.StartAfter)
	b.elemOmit("ContinuationToken", v.ContinuationToken)
	b.elemOmit("NextContinuationToken", v.NextContinuationToken)
	b.elemInt("KeyCount", int64(v.KeyCount))
	b.elemInt("MaxKeys", int64(v.MaxKeys))
	b.elemOmit("Delimiter", v.Delimiter)
	b.elemOmit("EncodingType", v.EncodingType)
	b.elemBool("IsTruncated", v.IsTruncated)
	b.contents(v.Contents, v.CommonPrefixes)
	b.close("ListBucketResult")
	return b
}

// writeXMLBytes is writeXML for a document already marshaled.
func writeXMLBytes(w http.ResponseWriter, status int, out []byte) error {
	h := w.Header()
	h.Set("Content-Type", "application/xml")
	h.Set("Content-Length", strconv.Itoa(len(xml.Header)+len(out)))
	w.WriteHeader(status)
	_, _ = io.WriteString(w, xml.Header)
	_, _ = w.Write(out)
	return nil
}

// marshalListVersions is xml.Marshal(v).
func marshalListVersions(v *listVersionsResult) []byte {
	b := make(xmlBuf, 0, 512+300*len(v.Entries)+64*len(v.CommonPrefixes))
	b.root("ListVersionsResult", v.Xmlns)
	b.elem("Name", v.Name)
	b.elem("Prefix", v.Prefix)
	b.elem("KeyMarker", v.KeyMarker)
	b.elem("VersionIdMarker", v.VersionIDMarker)
	b.elemOmit("NextKeyMarker", v.NextKeyMarker)
	b.elemOmit("NextVersionIdMarker", v.NextVersionIDMarker)
	b.elemInt("MaxKeys", int64(v.MaxKeys))
	b.elemOmit("Delimiter", v.Delimiter)
	b.elemOmit("EncodingType", v.EncodingType)
	b.elemBool("IsTruncated", v.IsTruncated)
	for i := range v.Entries {
		e := &v.Entries[i]
		name := e.XMLName.Local
		if name == "" || e.XMLName.Space != "" {
			// Never built by the handler; encoding/xml knows what to do.
			out, err := xml.Marshal(e)
			if err == nil {
				b = append(b, out...)
			}
			continue
		}
		b.open(name)
		b.elem("Key", e.Key)
		b.elem("VersionId", e.VersionID)
		b.elemBool("IsLatest", e.IsLatest)
		b.elem("LastModified", e.LastModified)
		b.elemOmit("ETag", e.ETag)
		if e.Size != nil {
			b.elemInt("Size", *e.Size)
		}
		b.elemOmit("StorageClass", e.StorageClass)
		b.open("Owner")
		b.elem("ID", e.Owner.ID)
		b.elem("DisplayName", e.Owner.DisplayName)
		b.close("Owner")
		b.close(name)
	}
	for _, p := range v.CommonPrefixes {
		b.open("CommonPrefixes")
		b.elem("Prefix", p.Prefix)
		b.close("CommonPrefixes")
	}
	b.close("ListVersionsResult")
	return b
}
