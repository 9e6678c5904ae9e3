package reshard_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cairn-s3/cairn/internal/bucketindex"
	"github.com/cairn-s3/cairn/internal/driver"
	"github.com/cairn-s3/cairn/internal/reshard"
)

var rewrite = flag.Bool("rewrite", false, "rewrite testdata transcripts with actual output")

// TestScripts runs the transcripts in testdata: each block is commands, a
// "----" line, the expected output, and a blank line. They walk a reshard
// through its steps (stopping at failpoints) and show the shard objects,
// their states and the instance record at each step.
//
//	new objects=N shards=S     fresh store, bucket "bkt" with N objects
//	reshard n=N [crash=POINT]  a new gateway reshards (dying at POINT)
//	resume                     leases lapse; a new gateway processes the queue
//	cancel                     leases lapse; a new gateway cancels
//	put KEY SIZE | delete KEY  S3 writes
//	shards                     index objects per generation: states, entries, log, epoch
//	record                     the instance's reshard record
//	check                      listing and stats against the model so far
//	dynamic max-objs=N copy-min=R copy-max=R
//	                           a gateway checking for dynamic reshards (adaptive
//	                           pace R..R entries/s) on a clock of its own
//	grow to=N secs=S           PUT obj/NNNNN up to N objects over S seconds
//	trigger                    that gateway's dynamic check: what it queued, why
//	reshard-dynamic secs=S     it runs the queue; its copy takes S seconds
func TestScripts(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.txt")
	if len(files) == 0 {
		t.Fatal("no transcripts")
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) { runScript(t, f) })
	}
}

func runScript(t *testing.T, file string) {
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	var e *env
	var md model
	lines := strings.Split(string(raw), "\n")
	for i := 0; i < len(lines); {
		// Copy comments and blank lines through.
		if l := lines[i]; l == "" || strings.HasPrefix(l, "#") {
			out.WriteString(l + "\n")
			i++
			continue
		}
		var cmds []string
		for ; i < len(lines) && lines[i] != "----"; i++ {
			cmds = append(cmds, lines[i])
		}
		i++ // "----"
		var want []string
		for ; i < len(lines) && lines[i] != ""; i++ {
			want = append(want, lines[i])
		}
		var got []string
		for _, c := range cmds {
			got = append(got, runCmd(t, &e, &md, c)...)
		}
		out.WriteString(strings.Join(cmds, "\n") + "\n----\n")
		for _, g := range got {
			out.WriteString(g + "\n")
		}
		if !*rewrite && strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("%s: %s\n got:\n%s\nwant:\n%s", file, strings.Join(cmds, "; "), strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
	if *rewrite {
		res := strings.TrimRight(out.String(), "\n") + "\n"
		if err := os.WriteFile(file, []byte(res), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func args(fields []string) map[string]string {
	m := map[string]string{}
	for _, f := range fields {
		k, v, _ := strings.Cut(f, "=")
		m[k] = v
	}
	return m
}

func runCmd(t *testing.T, ep **env, md *model, line string) []string {
	ctx := context.Background()
	f := strings.Fields(line)
	a := args(f[1:])
	e := *ep
	switch f[0] {
	case "new":
		*ep = newEnv(t)
		e = *ep
		shards, _ := strconv.Atoi(a["shards"])
		n, _ := strconv.Atoi(a["objects"])
		e.bucket("bkt", shards)
		*md = fill(e, "bkt", n)
		return nil
	case "reshard":
		n, _ := strconv.Atoi(a["n"])
		var crash []string
		if a["crash"] != "" {
			crash = []string{a["crash"]}
		}
		res, err := e.manager(crash...).Reshard(ctx, "bkt", n)
		if err != nil {
			return []string{"error: " + err.Error()}
		}
		return []string{fmt.Sprintf("ok: %d → %d shards, copied %d", res.From.NumShards, res.To.NumShards, res.Copied)}
	case "resume":
		e.expireLeases()
		if err := e.manager().Process(ctx); err != nil {
			return []string{"error: " + err.Error()}
		}
		return []string{"ok"}
	case "cancel":
		e.expireLeases()
		if err := e.manager(a["crash"]).Cancel(ctx, "bkt"); err != nil {
			return []string{"error: " + err.Error()}
		}
		return []string{"ok"}
	case "put":
		size, _ := strconv.Atoi(f[2])
		if err := e.put("bkt", f[1], size); err != nil {
			return []string{"error: " + err.Error()}
		}
		(*md)[f[1]] = size
		return nil
	case "delete":
		if err := e.d.DeleteObject(ctx, "bkt", f[1]); err != nil {
			return []string{"error: " + err.Error()}
		}
		delete(*md, f[1])
		return nil
	case "shards":
		return shardReport(t, e)
	case "record":
		inst := instance(t, e)
		if len(inst.Reshard) == 0 {
			return []string{fmt.Sprintf("layout gen %d × %d, no reshard", inst.Layout.Gen, inst.Layout.NumShards)}
		}
		var r map[string]any
		_ = json.Unmarshal(inst.Reshard, &r)
		return []string{fmt.Sprintf("layout gen %d × %d, reshard %v: source %v target %v copied %v/%v epoch %v cancel %v",
			inst.Layout.Gen, inst.Layout.NumShards, r["state"], layoutStr(r["source"]), layoutStr(r["target"]), r["copied"], r["total"], r["epoch"], r["cancel"] == true)}
	case "check":
		e.verify("bkt", *md)
		return []string{fmt.Sprintf("ok: %d objects", len(*md))}
	case "dynamic":
		maxObjs, _ := strconv.Atoi(a["max-objs"])
		lo, _ := strconv.Atoi(a["copy-min"])
		hi, _ := strconv.Atoi(a["copy-max"])
		e.dynNow = time.Unix(1_000_000, 0)
		m, err := reshard.New(ctx, reshard.Config{Driver: e.d, Store: e.st, MaxObjsPerShard: maxObjs,
			CopyRateAdaptive: true, CopyRateMin: lo, CopyRateLimit: hi, RampIn: -1, LeaseDuration: time.Hour,
			Now: func() time.Time { return e.dynNow },
			Failpoints: &reshard.Failpoints{Hit: func(_, p string) bool {
				if p == "after-copy" {
					e.dynNow = e.dynNow.Add(e.dynHold)
				}
				return false
			}}})
		if err != nil {
			t.Fatal(err)
		}
		e.dyn = m
		return nil
	case "grow":
		to, _ := strconv.Atoi(a["to"])
		secs, _ := strconv.Atoi(a["secs"])
		for i := len(*md); i < to; i++ {
			k := fmt.Sprintf("obj/%05d", i)
			e.mustPut("bkt", k, i%7)
			(*md)[k] = i % 7
		}
		e.dynNow = e.dynNow.Add(time.Duration(secs) * time.Second)
		return nil
	case "trigger":
		n, err := e.dyn.Check(ctx, "bkt")
		if err != nil {
			return []string{"error: " + err.Error()}
		}
		if n == 0 {
			st, _ := e.d.BucketStats(ctx, "bkt")
			return []string{fmt.Sprintf("no reshard due: %d objects in %d shards", st.NumObjects, st.NumShards)}
		}
		st, err := e.dyn.Status(ctx, "bkt")
		if err != nil || st.Sizing == nil {
			return []string{fmt.Sprintf("error: status %+v %v", st, err)}
		}
		z := st.Sizing
		return []string{fmt.Sprintf("queued %d → %d shards: %d objects, %d/s arriving, expected %.0f s (%s), sized for %d objects, room for %d",
			st.SourceShards, st.TargetShards, z.Objects, z.ArrivalsPerSec, z.ExpectedSec, z.Basis, z.Predicted, z.Capacity)}
	case "reshard-dynamic":
		secs, _ := strconv.Atoi(a["secs"])
		e.dynHold = time.Duration(secs) * time.Second
		if err := e.dyn.Process(ctx); err != nil {
			return []string{"error: " + err.Error()}
		}
		st, _ := e.d.BucketStats(ctx, "bkt")
		return []string{fmt.Sprintf("ok: %d shards", st.NumShards)}
	}
	t.Fatalf("unknown command %q", line)
	return nil
}

func layoutStr(v any) string {
	m, _ := v.(map[string]any)
	return fmt.Sprintf("gen %v × %v", m["gen"], m["num_shards"])
}

func instance(t *testing.T, e *env) driver.Instance {
	e.d.Invalidate("bkt")
	inst, err := e.d.Instance(context.Background(), "bkt")
	if err != nil {
		t.Fatal(err)
	}
	return inst
}

// shardReport summarises every index object of the bucket by generation.
func shardReport(t *testing.T, e *env) []string {
	ctx := context.Background()
	inst := instance(t, e)
	oids, _, err := e.d.IndexIO().ListObjects(ctx, "", 100000)
	if err != nil {
		t.Fatal(err)
	}
	gens := map[uint64][]int{}
	prefix := ".dir." + inst.ID + "."
	for _, o := range oids {
		if rest, ok := strings.CutPrefix(o, prefix); ok {
			g, s, _ := strings.Cut(rest, ".")
			gn, _ := strconv.ParseUint(g, 10, 64)
			sn, _ := strconv.Atoi(s)
			gens[gn] = append(gens[gn], sn)
		}
	}
	var keys []uint64
	for g := range gens {
		keys = append(keys, g)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
	var out []string
	for _, g := range keys {
		shards := gens[g]
		sort.Ints(shards)
		ix := bucketindex.Index{IO: e.d.IndexIO(), BucketID: inst.ID, Layout: bucketindex.Layout{Gen: g, NumShards: len(shards)}}
		states := map[string]int{}
		var objs, logs uint64
		var epoch uint64
		for _, s := range shards {
			si, err := ix.ShardInfo(ctx, s)
			if err != nil {
				t.Fatal(err)
			}
			st := si.State
			if st == "" {
				st = "open"
			}
			states[st]++
			objs += si.Stats.NumObjects
			recs, _, _ := ix.ReadLogRaw(ctx, s, 0, 0)
			logs += uint64(len(recs))
			epoch = max(epoch, si.Epoch)
		}
		var sts []string
		for s, n := range states {
			sts = append(sts, fmt.Sprintf("%s×%d", s, n))
		}
		sort.Strings(sts)
		out = append(out, fmt.Sprintf("gen %d: %d shards %s, %d entries, %d log records, epoch %d", g, len(shards), strings.Join(sts, " "), objs, logs, epoch))
	}
	return out
}
