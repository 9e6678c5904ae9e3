// Package radoscli is `cairn rados`: Ceph's rados tool over Cairn's object
// layer, working directly on a data directory that no gateway holds.
package radoscli

import (
	"context"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"time"

	"github.com/cairn-s3/cairn/internal/objstore"
)

// Usage is the command's help text.
const Usage = `usage: cairn rados [--data-dir DIR] [--pool P] [--namespace N] <command> [args]

Works directly on a data directory no gateway holds (the embedded store in
DIR/store). Flags may come before or after the command.

pool commands:
  lspools                    list pools
  mkpool P                   create pool P
object commands (need --pool):
  ls                         list objects in the namespace
  df                         objects and bytes in the namespace (rados df for one pool)
  stat OBJ                   size and mtime
  get OBJ FILE               write the object's data to FILE ("-" = stdout)
  put OBJ FILE               replace the object's data with FILE ("-" = stdin)
  rm OBJ                     remove the object
  listxattr OBJ              xattr names, one a line
  getxattr OBJ NAME          print an xattr's value
  setxattr OBJ NAME VALUE    set an xattr
  listomapkeys OBJ           omap keys, one a line, in order
  listomapvals OBJ           omap keys and values (hex dump)
  getomapval OBJ KEY         print one omap value
  setomapval OBJ KEY [VALUE] set an omap value (VALUE from stdin if omitted)
  rmomapkey OBJ KEY          remove an omap key

flags:
  --data-dir DIR   data directory (default ./data)
  -p, --pool P     pool
  -N, --namespace N  namespace (default: the empty namespace)
  --endpoint URL   run inside a running gateway through its admin API (admin keys from CAIRN_ACCESS_KEY/CAIRN_SECRET_KEY)
`

// Env is what the command needs from its caller.
type Env struct {
	// Open opens the embedded store of a data directory. create says the
	// command may initialise a new one (mkpool); otherwise a missing store
	// is an error.
	Open   func(dataDir string, create bool) (objstore.Store, error)
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
}

// Run executes one command line and returns the exit status: 0 ok, 1
// failure, 2 usage error.
func Run(ctx context.Context, args []string, env Env) int {
	fs := flag.NewFlagSet("cairn rados", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	dataDir := fs.String("data-dir", "./data", "")
	endpoint := fs.String("endpoint", "", "")
	var pool, ns string
	fs.StringVar(&pool, "pool", "", "")
	fs.StringVar(&pool, "p", "", "")
	fs.StringVar(&ns, "namespace", "", "")
	fs.StringVar(&ns, "N", "", "")
	help := fs.Bool("h", false, "")
	fs.BoolVar(help, "help", false, "")
	pos, err := parseAnywhere(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		*help = true
	} else if err != nil {
		fmt.Fprintf(env.Stderr, "cairn rados: %v\nRun 'cairn rados --help' for usage.\n", err)
		return 2
	}
	if *help {
		fmt.Fprint(env.Stdout, Usage)
		return 0
	}
	if len(pos) == 0 {
		fmt.Fprint(env.Stderr, Usage)
		return 2
	}
	if *endpoint != "" {
		fmt.Fprintln(env.Stderr, "cairn rados: --endpoint (through a gateway's admin API) is not available yet; stop the gateway and use --data-dir")
		return 2
	}
	verb, rest := pos[0], pos[1:]
	c, ok := commands[verb]
	if !ok {
		fmt.Fprintf(env.Stderr, "cairn rados: unknown command %q\nRun 'cairn rados --help' for usage.\n", verb)
		return 2
	}
	if len(rest) < c.minArgs || len(rest) > c.maxArgs {
		fmt.Fprintf(env.Stderr, "cairn rados %s: want %s\n", verb, c.args)
		return 2
	}
	if c.needPool && pool == "" {
		fmt.Fprintf(env.Stderr, "cairn rados %s: --pool is required\n", verb)
		return 2
	}
	st, err := env.Open(*dataDir, verb == "mkpool")
	if err != nil {
		fmt.Fprintf(env.Stderr, "cairn rados: %v\n", err)
		return 1
	}
	defer st.Close()
	r := &runner{ctx: ctx, st: st, env: env}
	if c.needPool {
		io, err := st.IOContext(ctx, pool)
		if err != nil {
			if errors.Is(err, objstore.ErrNotFound) {
				fmt.Fprintf(env.Stderr, "cairn rados: pool %q does not exist\n", pool)
			} else {
				fmt.Fprintf(env.Stderr, "cairn rados: open pool %q: %v\n", pool, err)
			}
			return 1
		}
		r.io = io.WithNamespace(ns)
	}
	if err := c.run(r, rest); err != nil {
		fmt.Fprintf(env.Stderr, "cairn rados %s: %v\n", verb, describe(err))
		return 1
	}
	return 0
}

// describe turns an errno into words people expect from rados.
func describe(err error) string {
	switch objstore.Code(err) {
	case objstore.ErrNotFound:
		return "no such object, key or attribute (" + err.Error() + ")"
	case objstore.ErrExists:
		return "already exists (" + err.Error() + ")"
	}
	return err.Error()
}

type command struct {
	args             string
	minArgs, maxArgs int
	needPool         bool
	run              func(r *runner, args []string) error
}

var commands = map[string]command{
	"lspools":      {"no arguments", 0, 0, false, (*runner).lspools},
	"mkpool":       {"POOL", 1, 1, false, (*runner).mkpool},
	"ls":           {"no arguments", 0, 0, true, (*runner).ls},
	"df":           {"no arguments", 0, 0, true, (*runner).df},
	"stat":         {"OBJ", 1, 1, true, (*runner).stat},
	"get":          {"OBJ FILE", 2, 2, true, (*runner).get},
	"put":          {"OBJ FILE", 2, 2, true, (*runner).put},
	"rm":           {"OBJ", 1, 1, true, (*runner).rm},
	"listxattr":    {"OBJ", 1, 1, true, (*runner).listxattr},
	"getxattr":     {"OBJ NAME", 2, 2, true, (*runner).getxattr},
	"setxattr":     {"OBJ NAME VALUE", 3, 3, true, (*runner).setxattr},
	"listomapkeys": {"OBJ", 1, 1, true, (*runner).listomapkeys},
	"listomapvals": {"OBJ", 1, 1, true, (*runner).listomapvals},
	"getomapval":   {"OBJ KEY", 2, 2, true, (*runner).getomapval},
	"setomapval":   {"OBJ KEY [VALUE]", 2, 3, true, (*runner).setomapval},
	"rmomapkey":    {"OBJ KEY", 2, 2, true, (*runner).rmomapkey},
}

type runner struct {
	ctx context.Context
	st  objstore.Store
	io  objstore.IOContext
	env Env
}

func (r *runner) lspools(_ []string) error {
	pools, err := r.st.ListPools(r.ctx)
	if err != nil {
		return err
	}
	for _, p := range pools {
		fmt.Fprintln(r.env.Stdout, p)
	}
	return nil
}

func (r *runner) mkpool(a []string) error {
	if err := r.st.CreatePool(r.ctx, a[0]); err != nil {
		return err
	}
	fmt.Fprintf(r.env.Stdout, "successfully created pool %s\n", a[0])
	return nil
}

func (r *runner) ls(_ []string) error {
	marker := ""
	for {
		oids, more, err := r.io.ListObjects(r.ctx, marker, 1000)
		if err != nil {
			return err
		}
		for _, o := range oids {
			fmt.Fprintln(r.env.Stdout, o)
		}
		if !more || len(oids) == 0 {
			return nil
		}
		marker = oids[len(oids)-1]
	}
}

// df sums the sizes of the namespace's objects (one stat each).
func (r *runner) df(_ []string) error {
	var n, bytes int64
	marker := ""
	for {
		oids, more, err := r.io.ListObjects(r.ctx, marker, 1000)
		if err != nil {
			return err
		}
		for _, o := range oids {
			op := objstore.NewReadOp()
			s := op.Stat()
			if err := r.read(o, op); err != nil && !errors.Is(err, objstore.ErrNotFound) {
				return err
			}
			if s.Exists {
				n++
				bytes += s.Stat.Size
			}
		}
		if !more || len(oids) == 0 {
			break
		}
		marker = oids[len(oids)-1]
	}
	fmt.Fprintf(r.env.Stdout, "POOL_NAME NAMESPACE OBJECTS BYTES\n%s %q %d %d\n", r.io.Pool(), r.io.Namespace(), n, bytes)
	return nil
}

func (r *runner) read(oid string, op *objstore.ReadOp) error {
	return r.io.OperateRead(r.ctx, oid, op)
}

func (r *runner) write(oid string, op *objstore.WriteOp) error {
	return r.io.Operate(r.ctx, oid, op)
}

func (r *runner) stat(a []string) error {
	op := objstore.NewReadOp()
	s := op.Stat()
	if err := r.read(a[0], op); err != nil {
		return err
	}
	if !s.Exists {
		return objstore.Errorf(objstore.ErrNotFound, "%s", a[0])
	}
	fmt.Fprintf(r.env.Stdout, "%s/%s mtime %s, size %d, version %d\n", r.io.Pool(), a[0],
		s.Stat.ModTime.UTC().Format(time.RFC3339Nano), s.Stat.Size, s.Stat.Version)
	return nil
}

func (r *runner) get(a []string) error {
	op := objstore.NewReadOp()
	s := op.Read(0, 0)
	if err := r.read(a[0], op); err != nil {
		return err
	}
	if a[1] == "-" {
		_, err := r.env.Stdout.Write(s.Data)
		return err
	}
	return os.WriteFile(a[1], s.Data, 0o644)
}

func (r *runner) put(a []string) error {
	var data []byte
	var err error
	if a[1] == "-" {
		data, err = io.ReadAll(io.LimitReader(r.env.Stdin, objstore.MaxObjectSize+1))
	} else {
		data, err = os.ReadFile(a[1])
	}
	if err != nil {
		return err
	}
	// Create first, so an empty file still makes an object.
	return r.write(a[0], objstore.NewWriteOp().Create(false).WriteFull(data))
}

func (r *runner) rm(a []string) error { return r.write(a[0], objstore.NewWriteOp().Remove()) }

func (r *runner) listxattr(a []string) error {
	op := objstore.NewReadOp()
	s := op.GetXattrs()
	if err := r.read(a[0], op); err != nil {
		return err
	}
	for _, kv := range s.Attrs {
		fmt.Fprintln(r.env.Stdout, kv.Key)
	}
	return nil
}

func (r *runner) getxattr(a []string) error {
	op := objstore.NewReadOp()
	s := op.GetXattr(a[1])
	if err := r.read(a[0], op); err != nil {
		return err
	}
	_, err := r.env.Stdout.Write(s.Value)
	return err
}

func (r *runner) setxattr(a []string) error {
	return r.write(a[0], objstore.NewWriteOp().SetXattr(a[1], []byte(a[2])))
}

func (r *runner) omapPages(oid string, each func(objstore.KV) error) error {
	after := ""
	for {
		op := objstore.NewReadOp()
		s := op.GetOmapValues(after, "", 1000)
		if err := r.read(oid, op); err != nil {
			return err
		}
		for _, kv := range s.Pairs {
			if err := each(kv); err != nil {
				return err
			}
		}
		if !s.More || len(s.Pairs) == 0 {
			return nil
		}
		after = s.Pairs[len(s.Pairs)-1].Key
	}
}

func (r *runner) listomapkeys(a []string) error {
	return r.omapPages(a[0], func(kv objstore.KV) error {
		_, err := fmt.Fprintln(r.env.Stdout, kv.Key)
		return err
	})
}

// listomapvals prints like rados: the key, then "value (N bytes) :" and a
// hex dump.
func (r *runner) listomapvals(a []string) error {
	return r.omapPages(a[0], func(kv objstore.KV) error {
		_, err := fmt.Fprintf(r.env.Stdout, "%s\nvalue (%d bytes) :\n%s\n", kv.Key, len(kv.Value), hex.Dump(kv.Value))
		return err
	})
}

func (r *runner) getomapval(a []string) error {
	op := objstore.NewReadOp()
	s := op.GetOmapValuesByKeys(a[1])
	if err := r.read(a[0], op); err != nil {
		return err
	}
	if len(s.Pairs) == 0 {
		return objstore.Errorf(objstore.ErrNotFound, "omap key %q", a[1])
	}
	_, err := fmt.Fprintf(r.env.Stdout, "value (%d bytes) :\n%s", len(s.Pairs[0].Value), hex.Dump(s.Pairs[0].Value))
	return err
}

func (r *runner) setomapval(a []string) error {
	var v []byte
	if len(a) == 3 {
		v = []byte(a[2])
	} else {
		var err error
		if v, err = io.ReadAll(io.LimitReader(r.env.Stdin, objstore.MaxOmapValueLen+1)); err != nil {
			return err
		}
	}
	return r.write(a[0], objstore.NewWriteOp().SetOmap(objstore.KV{Key: a[1], Value: v}))
}

func (r *runner) rmomapkey(a []string) error {
	return r.write(a[0], objstore.NewWriteOp().RmOmapKeys(a[1]))
}

// parseAnywhere parses flags placed before, between or after positional
// arguments and returns the positionals; "--" ends flags.
func parseAnywhere(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for len(args) > 0 {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			break
		}
		if n := len(args) - len(rest); n > 0 && args[n-1] == "--" {
			pos = append(pos, rest...)
			break
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
	return pos, nil
}

// Commands lists the command names, sorted (for help and tests).
func Commands() []string {
	var out []string
	for k := range commands {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
