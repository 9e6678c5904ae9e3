package driver

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"

	"github.com/cairn-s3/cairn/internal/bucketindex"
	"github.com/cairn-s3/cairn/internal/objstore"
)

// Storage classes are placed like RGW's placement storage classes: each
// class other than STANDARD has a data pool of its own; a run's manifest
// names the pool that holds it, so reads find the data wherever a
// transition put it.

// StandardClass is the default storage class, stored in PoolData.
const StandardClass = "STANDARD"

// ErrInvalidStorageClass is a storage class this gateway does not
// configure (S3's InvalidStorageClass).
var ErrInvalidStorageClass = errors.New("invalid storage class")

// StorageClass places one storage class.
type StorageClass struct {
	// Name is the class as S3 spells it (x-amz-storage-class).
	Name string
	// Pool is its data pool; "" = ClassPool(Name).
	Pool string
	// Store holds the pool; nil = Options.Store. The embedded backend
	// uses it to keep a class in a data directory of its own.
	Store objstore.Store
}

var className = regexp.MustCompile(`^[A-Z][A-Z0-9_]{0,63}$`)

// ValidClassName reports whether s can name a storage class (RGW: upper
// case letters, digits and underscores).
func ValidClassName(s string) bool { return className.MatchString(s) }

// ClassPool is the default data pool of a storage class, e.g.
// default.rgw.standard_ia.data for STANDARD_IA.
func ClassPool(class string) string { return "default.rgw." + strings.ToLower(class) + ".data" }

// placement is a configured class's pool, opened.
type placement struct {
	class, pool string
	io          objstore.IOContext
	// ownSync: the pool lives in a store of its own, which the synced
	// index write that commits a run does not sync.
	ownSync bool
}

// pools maps pool names to open IOContexts: the default data pool, each
// class's, and (lazily) pools met in manifests that no class names any
// more (a class removed from the configuration keeps its data readable).
type pools struct {
	mu      sync.Mutex
	byName  map[string]objstore.IOContext
	classes map[string]placement
}

func (d *Driver) openPlacement(ctx context.Context) error {
	d.pools.byName = map[string]objstore.IOContext{PoolData: d.data}
	d.pools.classes = map[string]placement{StandardClass: {class: StandardClass, pool: PoolData, io: d.data}}
	for _, c := range d.opts.StorageClasses {
		if !ValidClassName(c.Name) {
			return fmt.Errorf("driver: storage class %q: upper-case letters, digits and _ only", c.Name)
		}
		if _, dup := d.pools.classes[c.Name]; dup {
			return fmt.Errorf("driver: storage class %s configured twice", c.Name)
		}
		pool := c.Pool
		if pool == "" {
			pool = ClassPool(c.Name)
		}
		st := c.Store
		if st == nil {
			st = d.opts.Store
		}
		if err := st.CreatePool(ctx, pool); err != nil && !errors.Is(err, objstore.ErrExists) {
			return fmt.Errorf("driver: create pool %s of storage class %s: %w", pool, c.Name, err)
		}
		io, err := st.IOContext(ctx, pool)
		if err != nil {
			return err
		}
		d.pools.classes[c.Name] = placement{class: c.Name, pool: pool, io: io, ownSync: c.Store != nil}
		d.pools.byName[pool] = io
	}
	return nil
}

// placementFor resolves a requested class ("" = STANDARD).
func (d *Driver) placementFor(class string) (placement, error) {
	if class == "" {
		class = StandardClass
	}
	p, ok := d.pools.classes[class]
	if !ok {
		return placement{}, fmt.Errorf("%w: %s", ErrInvalidStorageClass, class)
	}
	return p, nil
}

// CheckStorageClass returns ErrInvalidStorageClass unless class is
// STANDARD or configured ("" is STANDARD).
func (d *Driver) CheckStorageClass(class string) error {
	_, err := d.placementFor(class)
	return err
}

// StorageClasses lists the configured classes, STANDARD first.
func (d *Driver) StorageClasses() []string {
	out := []string{StandardClass}
	for _, c := range d.opts.StorageClasses {
		out = append(out, c.Name)
	}
	return out
}

// dataIO returns the IOContext of a run's pool.
func (d *Driver) dataIO(ctx context.Context, pool string) (objstore.IOContext, error) {
	if pool == "" {
		return d.data, nil
	}
	d.pools.mu.Lock()
	defer d.pools.mu.Unlock()
	if io, ok := d.pools.byName[pool]; ok {
		return io, nil
	}
	io, err := d.opts.Store.IOContext(ctx, pool)
	if err != nil {
		return nil, fmt.Errorf("data pool %s: %w", pool, err)
	}
	d.pools.byName[pool] = io
	return io, nil
}

// poolField is what a run records for a placement: "" for the default
// pool, so manifests written before storage classes stay the same.
func (p placement) poolField() string {
	if p.pool == PoolData {
		return ""
	}
	return p.pool
}

// classField is what an entry records: "" for STANDARD.
func classField(class string) string {
	if class == StandardClass {
		return ""
	}
	return class
}

// removeRun removes a run's stripes from its pool.
func (d *Driver) removeRun(ctx context.Context, run bucketindex.Run) {
	d.removeManifest(ctx, bucketindex.Manifest{Runs: []bucketindex.Run{run}})
}

// removeManifest removes every data object of m, each run in its pool.
func (d *Driver) removeManifest(ctx context.Context, m bucketindex.Manifest) {
	for _, r := range m.Runs {
		if !r.Stored() {
			continue // inline: its bytes go with the entry
		}
		io, err := d.dataIO(ctx, r.Pool)
		if err != nil {
			d.log.Warn("remove data objects", "pool", r.Pool, "err", err)
			continue
		}
		d.removeObjectsIn(ctx, io, bucketindex.Manifest{Runs: []bucketindex.Run{r}}.Objects())
	}
}
