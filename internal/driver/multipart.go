package driver

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/cairn-s3/cairn/internal/bucketindex"
	"github.com/cairn-s3/cairn/internal/objstore"
	json "github.com/goccy/go-json"
)

// Multipart state lives in the index pool beside the bucket's shards:
//   .uploads.<bucket_id>              omap uploadKey(key, upload_id) → UploadInfo
//   .upload.<bucket_id>.<upload_id>   omap "%05d" part number → partRecord
// Part data are runs named by a fresh tag, like PUT data.

func uploadsOID(bucketID string) string          { return ".uploads." + bucketID }
func uploadOID(bucketID, uploadID string) string { return ".upload." + bucketID + "." + uploadID }
func partKey(n int) string                       { return fmt.Sprintf("%05d", n) }

// uploadKey orders uploads by (key, upload id). Omap keys may not hold NUL,
// so 0x01 is escaped as 0x01 0x02 and 0x01 0x01 separates: order-preserving.
func uploadKey(key, uploadID string) string { return escapeKey(key) + "\x01\x01" + uploadID }

func escapeKey(k string) string { return strings.ReplaceAll(k, "\x01", "\x01\x02") }

type partRecord struct {
	PartInfo
	Run bucketindex.Run `json:"run"`
	// Started orders uploads of the same part number (UnixNano when the
	// upload began): an upload that began earlier never replaces a later
	// one, so a slow first attempt finishing after its retry cannot swap
	// out the part the client completes with.
	Started int64 `json:"st,omitempty"`
	// DefaultCRC is the part's CRC64NVME (base64) when its upload has no
	// checksum algorithm: Complete combines them into S3's default
	// full-object checksum. Kept out of PartInfo, so clients see no
	// checksum they did not ask for.
	DefaultCRC string `json:"dcrc,omitempty"`
}

func (d *Driver) upload(ctx context.Context, bucket, key, uploadID string) (Instance, UploadInfo, error) {
	inst, err := d.Instance(ctx, bucket)
	if err != nil {
		return inst, UploadInfo{}, err
	}
	if uploadID == "" || strings.ContainsAny(uploadID, "/\x00") {
		return inst, UploadInfo{}, ErrNoSuchUpload
	}
	op := objstore.NewReadOp()
	vs := op.GetOmapValuesByKeys(uploadKey(key, uploadID))
	err = d.index.OperateRead(ctx, uploadsOID(inst.ID), op)
	if errors.Is(err, objstore.ErrNotFound) || errors.Is(err, objstore.ErrInvalid) || err == nil && len(vs.Pairs) == 0 {
		return inst, UploadInfo{}, ErrNoSuchUpload
	}
	if err != nil {
		return inst, UploadInfo{}, err
	}
	var ui UploadInfo
	if err := json.Unmarshal(vs.Pairs[0].Value, &ui); err != nil {
		return inst, ui, err
	}
	return inst, ui, nil
}

// CreateMultipartUpload starts an upload.
func (d *Driver) CreateMultipartUpload(ctx context.Context, bucket, key string, meta ObjectMeta) (string, error) {
	if !ValidKey(key) {
		return "", ErrInvalidKey
	}
	inst, err := d.Instance(ctx, bucket)
	if err != nil {
		return "", err
	}
	pl, err := d.placementFor(meta.StorageClass)
	if err != nil {
		return "", err
	}
	if m := meta; d.lockForWrite(inst, &m) != nil {
		return "", ErrNoLockConfig // lock headers on a bucket without object lock
	}
	rec, oek, err := d.newSSE(ctx, inst, key)
	if err != nil {
		return "", err
	}
	clear(oek) // each part opens it again
	meta.SSE = rec
	id := randomID(16)
	ui := UploadInfo{Bucket: bucket, Key: key, UploadID: id, Initiated: d.opts.Now().UTC(), Owner: inst.Owner, Meta: meta,
		Initiator: RequestFrom(ctx).Principal, StorageClass: classField(pl.class)}
	if meta.ACL != nil && meta.ACL.Owner.ID != "" {
		ui.Owner = meta.ACL.Owner.ID // the writer, as the completed object's
	}
	b, _ := json.Marshal(ui)
	if err := d.index.Operate(ctx, uploadOID(inst.ID, id), objstore.NewWriteOp().Create(true)); err != nil {
		return "", err
	}
	d.failpoint("create-upload")
	if err := d.index.Operate(ctx, uploadsOID(inst.ID), objstore.NewWriteOp().SetOmap(objstore.KV{Key: uploadKey(key, id), Value: b})); err != nil {
		return "", err
	}
	return id, nil
}

// UploadPart stores one part; re-uploading a part number replaces it.
// checksums are the client's verified values, complete at EOF of body ("" =
// announced, arriving by EOF); for an upload created with an algorithm the
// part gets that algorithm's checksum, computed here unless announced.
func (d *Driver) UploadPart(ctx context.Context, bucket, key, uploadID string, part int, body io.Reader, size int64, checksums map[string]string) (PartInfo, error) {
	if part < 1 || part > MaxPartNumber {
		return PartInfo{}, fmt.Errorf("%w: part number %d", ErrInvalidArgument, part)
	}
	if size > MaxPutSize {
		return PartInfo{}, ErrEntityTooLarge
	}
	inst, ui, err := d.upload(ctx, bucket, key, uploadID)
	if err != nil {
		return PartInfo{}, err
	}
	oek, err := d.openSSE(ctx, ui.Meta.SSE, key, sseFrom(ctx).CustomerKey)
	if err != nil {
		return PartInfo{}, err
	}
	defer clear(oek)
	// As RGW: a part that would take the bucket or its owner past a quota
	// is refused (parts count once the upload completes).
	qt, err := d.quotaAdmit(ctx, inst, 0, size)
	if err != nil {
		return PartInfo{}, err
	}
	defer qt.cancel()
	ph := newPartHasher(ui, body, checksums)
	started := d.opts.Now().UnixNano()
	tag := d.newTag()
	pl, err := d.placementFor(ui.StorageClass)
	if err != nil {
		return PartInfo{}, err // a class removed from the configuration since
	}
	run, sum, _, err := d.writeData(ctx, pl, tag, inst.ID+"/"+key, ph.body, MaxPutSize, oek, false, 0)
	if err == nil && size >= 0 && run.DataSize() != size {
		d.removeRun(context.WithoutCancel(ctx), run)
		err = ErrIncompleteBody
	}
	if err != nil {
		return PartInfo{}, err
	}
	d.failpoint("part-after-data")
	// checksums is complete only now: trailer values arrive at EOF.
	sums, err := ph.partChecksums(checksums)
	if err != nil {
		d.removeRun(context.WithoutCancel(ctx), run)
		return PartInfo{}, err
	}
	pi := PartInfo{PartNumber: part, ETag: sseETag(ui.Meta.SSE, oek, sum), Size: run.DataSize(), ModTime: d.opts.Now().UTC(), Checksums: sums, SSE: ui.Meta.SSE}
	rec, _ := json.Marshal(partRecord{PartInfo: pi, Run: run, Started: started, DefaultCRC: ph.defaultCRC(sums)})
	uo := uploadOID(inst.ID, uploadID)
	// Read the part being replaced and swap it, guarded so a concurrent
	// replacement of the same part is not lost.
	for {
		op := objstore.NewReadOp()
		st := op.Stat()
		vs := op.GetOmapValuesByKeys(partKey(part))
		if err := d.index.OperateRead(ctx, uo, op); err != nil {
			d.removeRun(context.WithoutCancel(ctx), run)
			if errors.Is(err, objstore.ErrNotFound) {
				return PartInfo{}, ErrNoSuchUpload
			}
			return PartInfo{}, err
		}
		if len(vs.Pairs) > 0 {
			var cur partRecord
			if json.Unmarshal(vs.Pairs[0].Value, &cur) == nil && cur.Started > started {
				// A later upload of this part already landed: it stays.
				d.removeRun(context.WithoutCancel(ctx), run)
				return pi, nil
			}
		}
		w := objstore.NewWriteOp().AssertVersion(st.Stat.Version).SetOmap(objstore.KV{Key: partKey(part), Value: rec})
		err := d.index.Operate(ctx, uo, w)
		if errors.Is(err, objstore.ErrCanceled) {
			continue
		}
		if err != nil {
			d.removeRun(context.WithoutCancel(ctx), run)
			return PartInfo{}, err
		}
		d.failpoint("part-after-swap")
		if len(vs.Pairs) > 0 {
			var old partRecord
			if json.Unmarshal(vs.Pairs[0].Value, &old) == nil {
				d.removeRun(context.WithoutCancel(ctx), old.Run)
			}
		}
		return pi, nil
	}
}

func (d *Driver) parts(ctx context.Context, bucketID, uploadID string) ([]partRecord, error) {
	op := objstore.NewReadOp()
	vs := op.GetOmapValues("", "", 0)
	if err := d.index.OperateRead(ctx, uploadOID(bucketID, uploadID), op); err != nil {
		if errors.Is(err, objstore.ErrNotFound) {
			return nil, ErrNoSuchUpload
		}
		return nil, err
	}
	out := make([]partRecord, 0, len(vs.Pairs))
	for _, kv := range vs.Pairs {
		var pr partRecord
		if err := json.Unmarshal(kv.Value, &pr); err != nil {
			return nil, err
		}
		out = append(out, pr)
	}
	return out, nil
}

// ListParts lists parts after marker.
func (d *Driver) ListParts(ctx context.Context, bucket, key, uploadID string, marker, max int) (ListPartsResult, error) {
	inst, ui, err := d.upload(ctx, bucket, key, uploadID)
	if err != nil {
		return ListPartsResult{}, err
	}
	if max <= 0 || max > 1000 {
		max = 1000
	}
	prs, err := d.parts(ctx, inst.ID, uploadID)
	if err != nil {
		return ListPartsResult{}, err
	}
	res := ListPartsResult{Upload: ui}
	for _, p := range prs {
		if p.PartNumber <= marker {
			continue
		}
		if len(res.Parts) == max {
			res.IsTruncated = true
			break
		}
		res.Parts = append(res.Parts, p.PartInfo)
		res.NextPartNumberMarker = p.PartNumber
	}
	return res, nil
}

// ListMultipartUploads lists in-progress uploads in (key, upload id) order.
func (d *Driver) ListMultipartUploads(ctx context.Context, in ListUploadsInput) (ListUploadsResult, error) {
	inst, err := d.Instance(ctx, in.Bucket)
	if err != nil {
		return ListUploadsResult{}, err
	}
	max := in.MaxUploads
	if max <= 0 || max > 1000 {
		max = 1000
	}
	after := ""
	if in.KeyMarker != "" {
		after = uploadKey(in.KeyMarker, in.UploadIDMarker)
		if in.UploadIDMarker == "" {
			after = uploadKey(in.KeyMarker, "\xff")
		}
	}
	var res ListUploadsResult
	for {
		op := objstore.NewReadOp()
		vs := op.GetOmapValues(after, escapeKey(in.Prefix), 1000)
		err := d.index.OperateRead(ctx, uploadsOID(inst.ID), op)
		if errors.Is(err, objstore.ErrNotFound) {
			return res, nil
		}
		if err != nil {
			return res, err
		}
		for _, kv := range vs.Pairs {
			after = kv.Key
			var ui UploadInfo
			if err := json.Unmarshal(kv.Value, &ui); err != nil {
				return res, err
			}
			if in.Delimiter != "" {
				rest := ui.Key[len(in.Prefix):]
				if i := strings.Index(rest, in.Delimiter); i >= 0 {
					cp := in.Prefix + rest[:i+len(in.Delimiter)]
					if n := len(res.CommonPrefixes); n == 0 || res.CommonPrefixes[n-1] != cp {
						if len(res.Uploads)+len(res.CommonPrefixes) == max {
							res.IsTruncated = true
							return res, nil
						}
						res.CommonPrefixes = append(res.CommonPrefixes, cp)
						res.NextKeyMarker, res.NextUploadIDMarker = cp, ""
					}
					continue
				}
			}
			if len(res.Uploads)+len(res.CommonPrefixes) == max {
				res.IsTruncated = true
				return res, nil
			}
			res.Uploads = append(res.Uploads, ui)
			res.NextKeyMarker, res.NextUploadIDMarker = ui.Key, ui.UploadID
		}
		if !vs.More {
			return res, nil
		}
	}
}

// CompleteMultipartUpload assembles the listed parts into one object
// without copying: the object's manifest names the parts' runs. The
// object's checksum is derived from the parts' (see mpchecksum.go) and
// must match sum when the client declared one (ErrBadDigest).
func (d *Driver) CompleteMultipartUpload(ctx context.Context, bucket, key, uploadID string, parts []CompletePart, sum ObjectChecksum) (ObjectInfo, error) {
	return d.CompleteMultipartUploadCond(ctx, bucket, key, uploadID, parts, sum, Conditions{})
}

// CompleteMultipartUploadCond is CompleteMultipartUpload with If-None-Match
// "*" / If-Match (c.IfNoneMatch, c.IfMatch), checked atomically when the
// object is linked. A retry of a Complete that already linked the object
// (its reply was lost) returns that object again.
func (d *Driver) CompleteMultipartUploadCond(ctx context.Context, bucket, key, uploadID string, parts []CompletePart, sum ObjectChecksum, c Conditions) (ObjectInfo, error) {
	inst, ui, err := d.upload(ctx, bucket, key, uploadID)
	if errors.Is(err, ErrNoSuchUpload) {
		if oi, ok := d.completed(ctx, bucket, key, uploadID); ok {
			return oi, nil
		}
	}
	if err != nil {
		return ObjectInfo{}, err
	}
	if len(parts) == 0 {
		return ObjectInfo{}, fmt.Errorf("%w: no parts", ErrInvalidPart)
	}
	prs, err := d.parts(ctx, inst.ID, uploadID)
	if err != nil {
		return ObjectInfo{}, err
	}
	byNum := map[int]partRecord{}
	for _, p := range prs {
		byNum[p.PartNumber] = p
	}
	var m bucketindex.Manifest
	md := md5.New()
	var size int64
	used := map[int]bool{}
	var listed []partRecord
	for i := 1; i < len(parts); i++ {
		if parts[i].PartNumber <= parts[i-1].PartNumber {
			return ObjectInfo{}, ErrInvalidPartOrder
		}
	}
	for i, cp := range parts {
		p, ok := byNum[cp.PartNumber]
		if !ok || strings.Trim(cp.ETag, `"`) != p.ETag {
			return ObjectInfo{}, fmt.Errorf("%w: part %d", ErrInvalidPart, cp.PartNumber)
		}
		if i < len(parts)-1 && p.Size < MinPartSize {
			return ObjectInfo{}, fmt.Errorf("%w: part %d is %d bytes", ErrEntityTooSmall, cp.PartNumber, p.Size)
		}
		if err := checkListedPartChecksums(cp, p); err != nil {
			return ObjectInfo{}, err
		}
		listed = append(listed, p)
		raw, _ := hex.DecodeString(p.ETag)
		md.Write(raw)
		size += p.Size
		m.Runs = append(m.Runs, p.Run)
		used[p.PartNumber] = true
	}
	if err := d.lockForWrite(inst, &ui.Meta); err != nil {
		return ObjectInfo{}, err
	}
	alg, typ, value, err := d.completeChecksum(ctx, ui, listed, sum)
	if err != nil {
		return ObjectInfo{}, err
	}
	ui.Meta.Checksums, ui.Meta.ChecksumType = nil, ""
	if alg != "" {
		ui.Meta.Checksums, ui.Meta.ChecksumType = map[string]string{alg: value}, typ
		for _, p := range listed {
			v := p.Checksums[alg]
			if v == "" {
				v = p.DefaultCRC // S3's default checksum
			}
			ui.Meta.PartChecksums = append(ui.Meta.PartChecksums, v)
		}
	}
	qt, err := d.quotaAdmit(ctx, inst, 1, size)
	if err != nil {
		return ObjectInfo{}, err
	}
	res, err := d.reserve(ctx, inst, key, "ObjectCreated:CompleteMultipartUpload", ui.Meta, size)
	if err != nil {
		qt.cancel()
		return ObjectInfo{}, err
	}
	e := bucketindex.Entry{
		Key: key, Size: size, ETag: fmt.Sprintf("%s-%d", hex.EncodeToString(md.Sum(nil)), len(parts)),
		ModTime: d.opts.Now().UTC(), Owner: inst.Owner, Tag: "mp_" + uploadID, Parts: len(parts), Manifest: m,
		Class: ui.StorageClass,
	}
	e.Meta = metaJSON(ui.Meta)
	// On failure the parts stay with the upload: link must not delete them.
	oi, err := d.link(ctx, bucket, e, putCond(c.IfNoneMatch, c.IfMatch), res, false, qt, nil)
	if err != nil {
		return ObjectInfo{}, err
	}
	var unused bucketindex.Manifest
	for _, p := range prs {
		if !used[p.PartNumber] {
			unused.Runs = append(unused.Runs, p.Run)
		}
	}
	d.removeManifest(context.WithoutCancel(ctx), unused)
	d.failpoint("complete-before-drop")
	d.dropUpload(context.WithoutCancel(ctx), inst.ID, key, uploadID)
	return oi, nil
}

// completed finds the object a finished upload linked: the current object,
// or on a versioned bucket the newest version, written under the upload's
// tag. Later writes to the key hide it (the retry then gets NoSuchUpload).
func (d *Driver) completed(ctx context.Context, bucket, key, uploadID string) (ObjectInfo, bool) {
	if !ValidKey(key) {
		return ObjectInfo{}, false
	}
	var e bucketindex.Entry
	var state string
	err := d.withIndex(ctx, bucket, func(inst Instance, ix bucketindex.Index) error {
		var err error
		state = inst.Versioning
		if e, err = ix.Get(ctx, key); err == nil && e.Tag == "mp_"+uploadID || inst.Versioning == "" {
			return err
		}
		e, err = ix.Newest(ctx, key)
		return err
	})
	if err != nil || e.Tag != "mp_"+uploadID {
		return ObjectInfo{}, false
	}
	return versionInfo(bucket, state, e), true
}

// uploadLinked returns the version of key (current or not) the upload
// linked, if any: a Complete that crashed before its clean-up. Its parts
// are that version's data and must stay.
func (d *Driver) uploadLinked(ctx context.Context, bucket, key, uploadID string) (bucketindex.Entry, bool, error) {
	var e bucketindex.Entry
	var found bool
	err := d.withIndex(ctx, bucket, func(_ Instance, ix bucketindex.Index) error {
		var err error
		e, found, _, err = findTag(ctx, ix, key, "mp_"+uploadID)
		return err
	})
	return e, found, err
}

func (d *Driver) dropUpload(ctx context.Context, bucketID, key, uploadID string) {
	_ = d.index.Operate(ctx, uploadsOID(bucketID), objstore.NewWriteOp().RmOmapKeys(uploadKey(key, uploadID)))
	d.failpoint("drop-upload")
	_ = d.index.Operate(ctx, uploadOID(bucketID, uploadID), objstore.NewWriteOp().Remove())
}

// AbortMultipartUpload removes an upload and its parts' data. Parts that a
// completed object already uses (a crash between complete's link and its
// clean-up) are kept.
func (d *Driver) AbortMultipartUpload(ctx context.Context, bucket, key, uploadID string) error {
	return d.AbortMultipartUploadEvent(ctx, bucket, key, uploadID, "")
}

// AbortMultipartUploadEvent is AbortMultipartUpload notifying event (""
// = none, as S3 sends for a client's abort): the lifecycle worker's
// ObjectLifecycle:Expiration:AbortMultipartUpload.
func (d *Driver) AbortMultipartUploadEvent(ctx context.Context, bucket, key, uploadID, event string) error {
	inst, ui, err := d.upload(ctx, bucket, key, uploadID)
	if err != nil {
		return err
	}
	prs, err := d.parts(ctx, inst.ID, uploadID)
	if err != nil && !errors.Is(err, ErrNoSuchUpload) {
		return err
	}
	linked, found, err := d.uploadLinked(ctx, bucket, key, uploadID)
	if err != nil {
		return err
	}
	if event != "" {
		// Event first, as for lifecycle expiries: a crash before the drop
		// makes the next pass abort (and notify) again, never silently.
		res, err := d.reserve(ctx, inst, key, event, ui.Meta, 0)
		if err != nil {
			return err
		}
		if res != nil {
			if err := res.Commit(ctx, ObjectInfo{Bucket: bucket, Key: key, Meta: ui.Meta, ModTime: d.opts.Now().UTC()}); err != nil {
				return fmt.Errorf("commit notification: %w", err)
			}
		}
	}
	for _, p := range prs {
		if found && usesRun(linked.Manifest, p.Run.Prefix) {
			continue // the completed object's data
		}
		d.failpoint("abort-part")
		d.removeRun(ctx, p.Run)
	}
	d.dropUpload(ctx, inst.ID, key, uploadID)
	return nil
}

// usesRun reports whether m names the run with prefix.
func usesRun(m bucketindex.Manifest, prefix string) bool {
	for _, r := range m.Runs {
		if r.Prefix == prefix {
			return true
		}
	}
	return false
}
