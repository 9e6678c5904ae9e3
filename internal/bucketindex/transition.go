package bucketindex

import (
	"context"
	"encoding/json"

	"github.com/cairn-s3/cairn/internal/objstore"
)

// setVersionDataIn is set_version_data's input: point one version at a
// copy of its data (a storage class transition), guarded by the version's
// write tag and the manifest the copy was made from.
type setVersionDataIn struct {
	Key       string   `json:"k"`
	VersionID string   `json:"i"` // "null" for the null (or legacy) version
	Tag       string   `json:"g"` // the version's write tag
	IfRuns    Manifest `json:"o"` // the manifest copied; ErrCanceled if it changed
	Manifest  Manifest `json:"m"`
	Class     string   `json:"sc,omitempty"`
	// GCTag names the GC record of the replaced data; it must be unique
	// (the write tag already names the version's own record when the
	// version is later replaced).
	GCTag string `json:"t"`
	// GCTime stamps the GC record (the caller's clock, unix ns; 0: none).
	GCTime int64 `json:"gt,omitempty"`
}

// SetVersionData replaces the manifest and storage class of version id of
// key (the record, and the bare head when it is that version) in one class
// call, recording the replaced data for collection under gcTag. Key,
// version id, ETag and metadata stay. tag is the version's write tag, old
// the manifest the caller copied: ErrNotFound when the version is gone or
// was replaced (another tag), ErrCanceled when its data changed since (a
// concurrent transition). The caller then removes its copy.
func (x Index) SetVersionData(ctx context.Context, key, id, tag string, old, m Manifest, class, gcTag string) error {
	in, err := json.Marshal(setVersionDataIn{Key: key, VersionID: id, Tag: tag, IfRuns: old, Manifest: m, Class: class, GCTag: gcTag, GCTime: x.gcTime()})
	if err != nil {
		return err
	}
	op := objstore.NewWriteOp()
	op.Exec(ClassName, "set_version_data", in)
	return x.IO.Operate(ctx, x.ShardFor(key), op)
}

func sameManifest(a, b Manifest) bool {
	if len(a.Runs) != len(b.Runs) {
		return false
	}
	for i := range a.Runs {
		if !a.Runs[i].Same(b.Runs[i]) {
			return false
		}
	}
	return true
}

func clsSetVersionData(ctx objstore.MethodContext, in []byte) ([]byte, error) {
	var si setVersionDataIn
	if err := json.Unmarshal(in, &si); err != nil {
		return nil, objstore.Errorf(objstore.ErrInvalid, "set_version_data input: %v", err)
	}
	if err := validKey(si.Key); err != nil {
		return nil, err
	}
	if si.GCTag == "" || si.GCTag == si.Tag {
		return nil, objstore.Errorf(objstore.ErrInvalid, "set_version_data needs a GC tag of its own")
	}
	t, err := beginTx(ctx)
	if err != nil {
		return nil, err
	}
	t.gcTime = si.GCTime
	notFound := objstore.Errorf(objstore.ErrNotFound, "version %q of %q", si.VersionID, si.Key)
	changed := objstore.Errorf(objstore.ErrCanceled, "data of %q changed", si.Key)
	bareRaw, err := t.get(si.Key)
	if err != nil {
		return nil, err
	}
	var bare *Entry
	if bareRaw != nil {
		b, err := decodeEntry(bareRaw)
		if err != nil {
			return nil, err
		}
		bare = &b
	}
	// swap switches e to the copy and hands its old data to the collector.
	swap := func(e *Entry) error {
		if !sameManifest(e.Manifest, si.IfRuns) {
			return changed
		}
		if err := t.collect(Entry{Tag: si.GCTag, Manifest: e.Manifest}); err != nil {
			return err
		}
		e.Manifest, e.Class = si.Manifest, si.Class
		return nil
	}
	var seq uint64
	if si.VersionID == NullVersion {
		ns, _, err := t.nullSeq(si.Key)
		if err != nil {
			return nil, err
		}
		if ns == 0 {
			// A legacy entry is the only version: only the bare head.
			if bare == nil || bare.Seq != 0 || bare.Tag != si.Tag {
				return nil, notFound
			}
			if err := swap(bare); err != nil {
				return nil, err
			}
			if err := t.setBare(si.Key, bareRaw, *bare); err != nil {
				return nil, err
			}
			return nil, t.commit()
		}
		seq = ns
	} else {
		var ok bool
		if seq, ok = ParseVersionID(si.VersionID); !ok {
			return nil, notFound
		}
	}
	raw, err := t.get(verKey(si.Key, seq))
	if err != nil {
		return nil, err
	}
	if raw == nil {
		return nil, notFound
	}
	rec, err := decodeEntry(raw)
	if err != nil {
		return nil, err
	}
	if rec.VersionID != si.VersionID || rec.Tag != si.Tag || rec.Marker {
		return nil, notFound
	}
	if err := swap(&rec); err != nil {
		return nil, err
	}
	if err := t.setRecord(rec, raw); err != nil {
		return nil, err
	}
	if bare != nil && bare.Seq == seq && bare.Tag == rec.Tag {
		if err := t.setBare(si.Key, bareRaw, rec); err != nil {
			return nil, err
		}
	}
	return nil, t.commit()
}
