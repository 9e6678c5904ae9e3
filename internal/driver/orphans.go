package driver

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/cairn-s3/cairn/internal/bucketindex"
	"github.com/cairn-s3/cairn/internal/objstore"
)

// The orphan scanner: no leaked space without a synced write on the PUT
// path (docs/design/orphans.md).
//
// Every run of data objects is named by a fresh tag and its head stripe
// carries ownerXattr ("<bucket id>/<key>") from the moment it is written.
// A crash between writing data and linking it (PUT, copy, UploadPart,
// the part swap of a re-uploaded part, Complete's and Abort's clean-ups,
// a delete's collection) leaves runs that no record names. The scanner
// walks the data pool in name order (a run's stripes are adjacent) and
// removes a run when all of these hold:
//   - every stripe was last modified before now - MinAge (a write in
//     progress keeps adding fresh stripes);
//   - its bucket instance is gone, or its head is gone (stripes left by a
//     removal cut short), or no part record of the bucket's uploads, no
//     record of its key and no GC record of its key's shard names it.
// The checks run in the order data moves between records (upload part →
// index entry → GC record → removed), so a run moving while it is checked
// is always seen in one of them. A head without ownerXattr (data of an
// older release) is never removed.

// OrphanOptions configure one scan.
type OrphanOptions struct {
	// MinAge: only data last modified longer ago is examined. It must
	// exceed the longest write (first stripe to link) while gateways serve.
	MinAge time.Duration
	// Remove deletes what is found (orphans rm); false only reports.
	Remove bool
	// MaxListed bounds OrphanReport.Objects (0: 1000).
	MaxListed int
	// Rate paces the data pass to about this many objects a second (0:
	// unpaced), so a background scan leaves the foreground its CPU and I/O.
	Rate int
	// Hold, if set, keeps the caller's scan lease: it is called before
	// every removal and before each run is examined, and its error (the
	// lease is lost: another scan may run) stops the scan at once.
	Hold func(context.Context) error
}

// OrphanReport is what one scan found.
type OrphanReport struct {
	Examined     int            `json:"examined"`          // data objects listed
	Young        int            `json:"young"`             // skipped: modified within min-age
	Unowned      int            `json:"unowned"`           // skipped: head without an owner record
	Orphans      int            `json:"orphans"`           // unreferenced data objects found
	OrphanBytes  int64          `json:"orphan_bytes"`      // their size
	Removed      int            `json:"removed"`           // of those, removed
	Uploads      int            `json:"completed_uploads"` // completed uploads whose clean-up a crash cut short
	StaleUploads int            `json:"stale_uploads"`     // upload records no upload list names
	Objects      []OrphanObject `json:"objects"`
	Truncated    bool           `json:"truncated"` // Objects holds only the first MaxListed
}

// OrphanObject is one unreferenced data object.
type OrphanObject struct {
	OID     string    `json:"oid"`
	Size    int64     `json:"size"`
	ModTime time.Time `json:"mtime"`
	Owner   string    `json:"owner,omitempty"` // "<bucket id>/<key>"
	Reason  string    `json:"reason"`
}

// Reasons an object is an orphan.
const (
	OrphanUnlinked   = "unreferenced"   // no record names its run
	OrphanNoBucket   = "bucket-removed" // its bucket instance is gone
	OrphanHeadless   = "no-head"        // stripes of a run whose head was removed
	orphanPageLength = 1000
)

// runPrefix is the run a data object belongs to: stripe i > 0 of run p is
// "p.<i>", and tags hold no dot.
func runPrefix(oid string) string {
	if i := strings.IndexByte(oid, '.'); i >= 0 {
		return oid[:i]
	}
	return oid
}

type orphanScan struct {
	d      *Driver
	io     objstore.IOContext // the data pool being listed
	opt    OrphanOptions
	cutoff time.Time
	rep    OrphanReport
	// uploadRuns caches per bucket id the runs its upload records name
	// (nil map: bucket gone), loaded before the first check in it.
	uploadRuns map[string]map[string]bool
	// dropped are upload records this scan drops (or would): their parts
	// reference nothing.
	dropped map[string]bool
	names   map[string]string // bucket id → name, with uploadRuns
}

// ScanOrphans finds (and with opt.Remove removes) data no record
// references, and finishes multipart uploads whose Complete was cut short.
// Safe while gateways serve, given a MinAge longer than any write.
func (d *Driver) ScanOrphans(ctx context.Context, opt OrphanOptions) (OrphanReport, error) {
	if opt.MaxListed <= 0 {
		opt.MaxListed = 1000
	}
	s := &orphanScan{d: d, opt: opt, cutoff: d.opts.Now().Add(-opt.MinAge), uploadRuns: map[string]map[string]bool{}, dropped: map[string]bool{}, names: map[string]string{}}
	s.rep.Objects = []OrphanObject{}
	if err := s.uploads(ctx); err != nil {
		return s.rep, err
	}
	start := time.Now()
	for _, io := range d.dataPools() {
		s.io = io
		if err := s.pool(ctx, start); err != nil {
			return s.rep, err
		}
	}
	return s.rep, nil
}

// dataPools are the distinct pools of the configured storage classes,
// STANDARD's first: a transition or a class's PUT writes data there.
func (d *Driver) dataPools() []objstore.IOContext {
	d.pools.mu.Lock()
	defer d.pools.mu.Unlock()
	out := []objstore.IOContext{d.data}
	seen := map[objstore.IOContext]bool{d.data: true}
	names := slices.Sorted(maps.Keys(d.pools.classes))
	for _, n := range names {
		if pl := d.pools.classes[n]; !seen[pl.io] {
			seen[pl.io] = true
			out = append(out, pl.io)
		}
	}
	return out
}

// pool scans s.io.
func (s *orphanScan) pool(ctx context.Context, start time.Time) error {
	var group []string
	marker := ""
	opt := s.opt
	for {
		oids, more, err := s.io.ListObjects(ctx, marker, orphanPageLength)
		if err != nil {
			return err
		}
		for _, oid := range oids {
			if len(group) > 0 && runPrefix(oid) != runPrefix(group[0]) {
				if err := s.hold(ctx); err != nil {
					return err
				}
				if err := s.run(ctx, group); err != nil {
					return err
				}
				group = group[:0]
				if err := pace(ctx, start, s.rep.Examined, opt.Rate); err != nil {
					return err
				}
			}
			group = append(group, oid)
		}
		if !more || len(oids) == 0 {
			break
		}
		marker = oids[len(oids)-1]
	}
	if len(group) > 0 {
		if err := s.hold(ctx); err != nil {
			return err
		}
		return s.run(ctx, group)
	}
	return nil
}

func (s *orphanScan) hold(ctx context.Context) error {
	if s.opt.Hold == nil {
		return nil
	}
	return s.opt.Hold(ctx)
}

// pace waits until n objects at rate per second have had their time.
func pace(ctx context.Context, start time.Time, n, rate int) error {
	if rate <= 0 {
		return nil
	}
	wait := time.Until(start.Add(time.Duration(n) * time.Second / time.Duration(rate)))
	if wait <= 0 {
		return nil
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// run examines the stripes of one run.
func (s *orphanScan) run(ctx context.Context, oids []string) error {
	s.rep.Examined += len(oids)
	prefix := runPrefix(oids[0])
	type obj struct {
		oid string
		st  objstore.Stat
	}
	var objs []obj
	owner, head := "", false
	for _, oid := range oids {
		op := objstore.NewReadOp()
		st := op.Stat()
		var ow *objstore.GetXattrStep
		if oid == prefix {
			ow = op.GetXattrOptional(ownerXattr)
		}
		err := s.io.OperateRead(ctx, oid, op)
		if errors.Is(err, objstore.ErrNotFound) || err == nil && !st.Exists {
			continue // removed since listed
		}
		if err != nil {
			return err
		}
		if st.Stat.ModTime.After(s.cutoff) {
			s.rep.Young += len(oids)
			return nil
		}
		objs = append(objs, obj{oid, st.Stat})
		if ow != nil {
			head = true
			if ow.Found {
				owner = string(ow.Value)
			}
		}
	}
	if len(objs) == 0 {
		return nil
	}
	reason, err := s.orphaned(ctx, prefix, head, owner)
	if err != nil || reason == "" {
		return err
	}
	var rm []string
	for _, o := range objs {
		s.rep.Orphans++
		s.rep.OrphanBytes += o.st.Size
		if len(s.rep.Objects) < s.opt.MaxListed {
			s.rep.Objects = append(s.rep.Objects, OrphanObject{OID: o.oid, Size: o.st.Size, ModTime: o.st.ModTime.UTC(), Owner: owner, Reason: reason})
		} else {
			s.rep.Truncated = true
		}
		rm = append(rm, o.oid)
	}
	if s.opt.Remove {
		// Head first: a run cut short by a crash is then headless, which
		// the next scan recognises without its owner.
		for _, oid := range rm {
			if err := s.hold(ctx); err != nil {
				return err
			}
			err := s.io.Operate(ctx, oid, objstore.NewWriteOp().Remove())
			if err != nil && !errors.Is(err, objstore.ErrNotFound) {
				return err
			}
			s.rep.Removed++
		}
	}
	return nil
}

// orphaned says why run prefix is an orphan, or "" when something
// references it (or its owner is unknown).
func (s *orphanScan) orphaned(ctx context.Context, prefix string, head bool, owner string) (string, error) {
	if !head {
		return OrphanHeadless, nil
	}
	bid, key, ok := strings.Cut(owner, "/")
	if !ok {
		s.rep.Unowned++
		return "", nil
	}
	runs, err := s.uploadsOf(ctx, bid)
	if err != nil {
		return "", err
	}
	if runs == nil {
		return OrphanNoBucket, nil
	}
	if runs[prefix] {
		return "", nil
	}
	// The name read at the bucket's first run: withIndex reads the
	// current instance, and a bucket deleted or renamed since is noticed.
	var refd bool
	err = s.d.withIndex(ctx, s.names[bid], func(cur Instance, ix bucketindex.Index) error {
		switch {
		case cur.ID != bid:
			refd = false // the name now belongs to a newer bucket
			return nil
		case cur.Reshard != nil:
			// GC records wait on the old generation until the cleanup
			// moves them: check again at the next scan.
			refd = true
			return nil
		}
		var err error
		if refd, err = ix.References(ctx, key, prefix); refd || err != nil {
			return err
		}
		// A reshard moves GC records to the shard of their tag, not of
		// their key: look through every shard's before deciding.
		for i := 0; i < ix.Layout.NumShards && !refd; i++ {
			recs, err := ix.PendingGC(ctx, i, 0)
			if errors.Is(err, objstore.ErrNotFound) {
				return objstore.Errorf(objstore.ErrStale, "index shard %d gone", i)
			}
			if err != nil {
				return err
			}
			for _, r := range recs {
				refd = refd || usesRun(r.Manifest, prefix)
			}
		}
		return nil
	})
	switch {
	case errors.Is(err, ErrNoSuchBucket):
		return OrphanNoBucket, nil
	case err != nil:
		return "", err
	case refd:
		return "", nil
	}
	return OrphanUnlinked, nil
}

// uploadsOf returns the runs bucket id's upload records name (nil: the
// bucket is gone), reading them at the first call for the bucket.
func (s *orphanScan) uploadsOf(ctx context.Context, bid string) (map[string]bool, error) {
	if runs, ok := s.uploadRuns[bid]; ok {
		return runs, nil
	}
	inst, _, err := s.d.ReadInstance(ctx, bid)
	if errors.Is(err, ErrNoSuchBucket) {
		s.uploadRuns[bid] = nil
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	s.names[bid] = inst.Name
	runs := map[string]bool{}
	ids, err := listPrefix(ctx, s.d.index, ".upload."+bid+".")
	if err != nil {
		return nil, err
	}
	for _, oid := range ids {
		if s.dropped[oid] {
			continue
		}
		prs, err := s.d.parts(ctx, bid, strings.TrimPrefix(oid, ".upload."+bid+"."))
		if errors.Is(err, ErrNoSuchUpload) {
			continue
		}
		if err != nil {
			return nil, err
		}
		for _, p := range prs {
			runs[p.Run.Prefix] = true
		}
	}
	s.uploadRuns[bid] = runs
	return runs, nil
}

// uploads repairs multipart state a crash left half changed, before the
// data pass: upload records (.upload.<bid>.<id>) that no upload list names
// (a Create or a drop cut short) are removed, and uploads whose object was
// linked (a Complete cut short before its clean-up) are dropped; the data
// pass then finds their unused parts unreferenced. Only records older
// than the cutoff are touched.
func (s *orphanScan) uploads(ctx context.Context) error {
	oids, err := listPrefix(ctx, s.d.index, ".upload.")
	if err != nil {
		return err
	}
	listed := map[string]map[string]UploadInfo{} // bucket id → upload id → info
	for _, oid := range oids {
		rest := strings.TrimPrefix(oid, ".upload.")
		i := strings.LastIndexByte(rest, '.')
		if i < 0 {
			continue
		}
		bid, uid := rest[:i], rest[i+1:]
		ups, ok := listed[bid]
		if !ok {
			if ups, err = s.d.uploadList(ctx, bid); err != nil {
				return err
			}
			listed[bid] = ups
		}
		if _, ok := ups[uid]; ok {
			continue
		}
		op := objstore.NewReadOp()
		st := op.Stat()
		if err := s.d.index.OperateRead(ctx, oid, op); err != nil || !st.Exists || st.Stat.ModTime.After(s.cutoff) {
			continue
		}
		s.rep.StaleUploads++
		s.dropped[oid] = true
		if s.opt.Remove {
			if err := s.hold(ctx); err != nil {
				return err
			}
			if err := s.d.index.Operate(ctx, oid, objstore.NewWriteOp().Remove()); err != nil && !errors.Is(err, objstore.ErrNotFound) {
				return err
			}
		}
	}
	for bid, ups := range listed {
		inst, _, err := s.d.ReadInstance(ctx, bid)
		if err != nil {
			continue
		}
		for _, ui := range ups {
			if ui.Initiated.After(s.cutoff) {
				continue
			}
			_, linked, err := s.d.uploadLinked(ctx, inst.Name, ui.Key, ui.UploadID)
			if err != nil {
				return err
			}
			if !linked {
				continue
			}
			s.rep.Uploads++
			s.dropped[uploadOID(bid, ui.UploadID)] = true
			if s.opt.Remove {
				if err := s.hold(ctx); err != nil {
					return err
				}
				s.d.dropUpload(ctx, bid, ui.Key, ui.UploadID)
			}
		}
	}
	return nil
}

// uploadList reads a bucket's upload list (upload id → info).
func (d *Driver) uploadList(ctx context.Context, bid string) (map[string]UploadInfo, error) {
	out := map[string]UploadInfo{}
	after := ""
	for {
		op := objstore.NewReadOp()
		vs := op.GetOmapValues(after, "", 1000)
		err := d.index.OperateRead(ctx, uploadsOID(bid), op)
		if errors.Is(err, objstore.ErrNotFound) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		for _, kv := range vs.Pairs {
			after = kv.Key
			var ui UploadInfo
			if json.Unmarshal(kv.Value, &ui) == nil {
				out[ui.UploadID] = ui
			}
		}
		if !vs.More || len(vs.Pairs) == 0 {
			return out, nil
		}
	}
}

// listPrefix lists the objects of io whose names begin with prefix.
func listPrefix(ctx context.Context, io objstore.IOContext, prefix string) ([]string, error) {
	var out []string
	marker := prefix // every name with the prefix sorts after it
	for {
		oids, more, err := io.ListObjects(ctx, marker, orphanPageLength)
		if err != nil {
			return nil, err
		}
		for _, oid := range oids {
			if !strings.HasPrefix(oid, prefix) {
				return out, nil
			}
			out = append(out, oid)
		}
		if !more || len(oids) == 0 {
			return out, nil
		}
		marker = oids[len(oids)-1]
	}
}
