package objstoretest

import (
	"bytes"
	"strconv"
	"strings"

	"github.com/cairn-s3/cairn/internal/objstore"
)

// TestClass is the class RegisterTestClasses installs; OtherClass is a
// second class, for cache isolation between classes.
const (
	TestClass  = "objstoretest"
	OtherClass = "objstoretest2"
)

// RegisterTestClasses registers the methods the conformance suite's exec
// tests call. Backends under test must be opened with a registry holding
// them.
func RegisterTestClasses(reg *objstore.Registry) {
	rd, rw := objstore.MethodRead, objstore.MethodRead|objstore.MethodWrite
	// echo returns its input.
	reg.Register(TestClass, "echo", rd, func(_ objstore.MethodContext, in []byte) ([]byte, error) {
		return in, nil
	})
	// stat returns "<exists> <size>" as the method sees the object.
	reg.Register(TestClass, "stat", rd, func(ctx objstore.MethodContext, _ []byte) ([]byte, error) {
		if !ctx.Exists() {
			return []byte("false 0"), nil
		}
		st, err := ctx.Stat()
		if err != nil {
			return nil, err
		}
		return []byte("true " + strconv.FormatInt(st.Size, 10)), nil
	})
	// get_omap returns the value of omap key in.
	reg.Register(TestClass, "get_omap", rd, func(ctx objstore.MethodContext, in []byte) ([]byte, error) {
		return ctx.GetOmapVal(string(in))
	})
	// get_omap_keys returns "k=v;" for each existing key of the
	// space-separated keys in, as GetOmapValsByKeys orders them.
	reg.Register(TestClass, "get_omap_keys", rd, func(ctx objstore.MethodContext, in []byte) ([]byte, error) {
		kvs, err := ctx.GetOmapValsByKeys(strings.Fields(string(in))...)
		if err != nil {
			return nil, err
		}
		var out []byte
		for _, kv := range kvs {
			out = append(append(append(append(out, kv.Key...), '='), kv.Value...), ';')
		}
		return out, nil
	})
	// read returns the whole data.
	reg.Register(TestClass, "read", rd, func(ctx objstore.MethodContext, _ []byte) ([]byte, error) {
		return ctx.Read(0, 0)
	})
	// set_xattr sets "name=value".
	reg.Register(TestClass, "set_xattr", rw, func(ctx objstore.MethodContext, in []byte) ([]byte, error) {
		k, v, _ := bytes.Cut(in, []byte("="))
		return nil, ctx.SetXattr(string(k), v)
	})
	// append appends in and returns the new size.
	reg.Register(TestClass, "append", rw, func(ctx objstore.MethodContext, in []byte) ([]byte, error) {
		if err := ctx.Append(in); err != nil {
			return nil, err
		}
		st, err := ctx.Stat()
		if err != nil {
			return nil, err
		}
		return []byte(strconv.FormatInt(st.Size, 10)), nil
	})
	// incr increments the decimal omap value "counter", trusting its cache
	// slot "counter" when present, and returns the new value.
	reg.Register(TestClass, "incr", rw, func(ctx objstore.MethodContext, _ []byte) ([]byte, error) {
		var n uint64
		if v, ok := ctx.Cached("counter"); ok {
			n = v.(uint64)
		} else if ctx.Exists() {
			b, err := ctx.GetOmapVal("counter")
			if err != nil && objstore.Code(err) != objstore.ErrNotFound {
				return nil, err
			}
			if len(b) > 0 {
				if n, err = strconv.ParseUint(string(b), 10, 64); err != nil {
					return nil, objstore.Errorf(objstore.ErrInvalid, "counter %q", b)
				}
			}
		}
		n++
		s := strconv.FormatUint(n, 10)
		if err := ctx.SetOmap(objstore.KV{Key: "counter", Value: []byte(s)}); err != nil {
			return nil, err
		}
		ctx.SetCached("counter", n)
		return []byte(s), nil
	})
	// fail writes (data, xattr, omap) and then fails with ErrBusy.
	reg.Register(TestClass, "fail", rw, func(ctx objstore.MethodContext, _ []byte) ([]byte, error) {
		if err := ctx.WriteFull([]byte("from fail")); err != nil {
			return nil, err
		}
		if err := ctx.SetXattr("fail", []byte("1")); err != nil {
			return nil, err
		}
		if err := ctx.SetOmap(objstore.KV{Key: "fail", Value: []byte("1")}); err != nil {
			return nil, err
		}
		return nil, objstore.Errorf(objstore.ErrBusy, "fail: as asked")
	})
	// sneaky_write is registered read-only but tries to write; it returns
	// the write's error.
	reg.Register(TestClass, "sneaky_write", rd, func(ctx objstore.MethodContext, _ []byte) ([]byte, error) {
		return nil, ctx.SetXattr("sneaky", []byte("1"))
	})
	// now returns ctx.Now() in Unix nanoseconds.
	reg.Register(TestClass, "now", rd, func(ctx objstore.MethodContext, _ []byte) ([]byte, error) {
		return []byte(strconv.FormatInt(ctx.Now().UnixNano(), 10)), nil
	})
	// cache_set stages cache slot=value (a string) without writing.
	reg.Register(TestClass, "cache_set", rd, func(ctx objstore.MethodContext, in []byte) ([]byte, error) {
		k, v, _ := bytes.Cut(in, []byte("="))
		ctx.SetCached(string(k), string(v))
		return nil, nil
	})
	// cache_get returns the cached string for slot in, or "<miss>".
	reg.Register(TestClass, "cache_get", rd, func(ctx objstore.MethodContext, in []byte) ([]byte, error) {
		v, ok := ctx.Cached(string(in))
		if !ok {
			return []byte("<miss>"), nil
		}
		return []byte(v.(string)), nil
	})
	// OtherClass.touch writes an xattr through a different class.
	reg.Register(OtherClass, "touch", rw, func(ctx objstore.MethodContext, in []byte) ([]byte, error) {
		return nil, ctx.SetXattr("touched", in)
	})
}
