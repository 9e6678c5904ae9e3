package bucketindex

import (
	"bytes"
	"context"

	"github.com/cairn-s3/cairn/internal/objstore"
	json "github.com/goccy/go-json"
)

// setVersionMetaIn is set_version_meta's input: replace the metadata of
// one version (object tags, retention, legal hold) in place, guarded by
// the metadata the caller read, so a read-modify-write never loses a
// concurrent change.
type setVersionMetaIn struct {
	Key       string          `json:"k"`
	VersionID string          `json:"i"` // "null" for the null (or legacy) version
	Tag       string          `json:"g"` // the version's write tag
	IfMeta    json.RawMessage `json:"o"` // the metadata read; ErrCanceled if it changed
	Meta      json.RawMessage `json:"x"`
}

// SetVersionMeta replaces the metadata of version id of key (the record,
// and the bare head when it is that version) in one class call. tag is the
// version's write tag; ifMeta the metadata the caller based meta on.
// ErrNotFound when the version is gone or was replaced (another tag),
// ErrCanceled when its metadata changed since it was read.
func (x Index) SetVersionMeta(ctx context.Context, key, id, tag string, ifMeta, meta []byte) error {
	in, err := json.Marshal(setVersionMetaIn{Key: key, VersionID: id, Tag: tag, IfMeta: rawOrNull(ifMeta), Meta: rawOrNull(meta)})
	if err != nil {
		return err
	}
	op := objstore.NewWriteOp()
	op.Exec(ClassName, "set_version_meta", in)
	return x.IO.Operate(ctx, x.ShardFor(key), op)
}

func rawOrNull(b []byte) json.RawMessage {
	if len(b) == 0 {
		return json.RawMessage("null")
	}
	return b
}

func sameMeta(a, b json.RawMessage) bool {
	if len(a) == 0 {
		a = json.RawMessage("null")
	}
	if len(b) == 0 {
		b = json.RawMessage("null")
	}
	return bytes.Equal(a, b)
}

func clsSetVersionMeta(ctx objstore.MethodContext, in []byte) ([]byte, error) {
	var si setVersionMetaIn
	if err := json.Unmarshal(in, &si); err != nil {
		return nil, objstore.Errorf(objstore.ErrInvalid, "set_version_meta input: %v", err)
	}
	if err := validKey(si.Key); err != nil {
		return nil, err
	}
	t, err := beginTx(ctx)
	if err != nil {
		return nil, err
	}
	notFound := objstore.Errorf(objstore.ErrNotFound, "version %q of %q", si.VersionID, si.Key)
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
			if !sameMeta(bare.Meta, si.IfMeta) {
				return nil, objstore.Errorf(objstore.ErrCanceled, "metadata of %q changed", si.Key)
			}
			bare.Meta = si.Meta
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
	if !sameMeta(rec.Meta, si.IfMeta) {
		return nil, objstore.Errorf(objstore.ErrCanceled, "metadata of %q changed", si.Key)
	}
	rec.Meta = si.Meta
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

// UnlinkCond makes UnlinkVersionIf conditional.
type UnlinkCond struct {
	IfETag string
	IfTag  string // only if the version is still the write with this tag
	// CheckMeta: only if the version's metadata is still IfMeta (what the
	// caller read when it decided the version may go: object lock).
	CheckMeta bool
	IfMeta    []byte
}

// UnlinkVersionIf is UnlinkVersion with conditions; a failed one is
// ErrCanceled.
func (x Index) UnlinkVersionIf(ctx context.Context, key, id string, c UnlinkCond) (VersionResult, error) {
	ui := unlinkVersionIn{Key: key, VersionID: id, IfETag: c.IfETag, IfTag: c.IfTag, CheckMeta: c.CheckMeta, GCTime: x.gcTime()}
	if c.CheckMeta {
		ui.IfMeta = rawOrNull(c.IfMeta)
	}
	in, _ := json.Marshal(ui)
	return x.versionOp(ctx, key, "unlink_version", in, false, nil, nil)
}
