package layering

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/cairn-s3/cairn/"

// layers places every package (by path prefix under the module; the
// longest prefix wins). A package may import packages of its own layer or
// lower ones, never higher. A new package must be placed here, which is
// the point: where it sits is a design decision.
var layers = map[string]int{
	// 0: leaves: formats, errors, pure decisions, options.
	"internal/s3err": 0, "internal/checksum": 0, "internal/authz": 0, "internal/config": 0,
	"internal/redact": 0, "internal/tagging": 0, "internal/objectlock": 0, "internal/kms": 0,
	"internal/crypt": 0, "internal/sse": 0, "internal/testenv": 0, "internal/notify/event": 0,
	"internal/layering": 0, "internal/auth": 0, "internal/buildinfo": 0, "internal/ratelimit": 0,
	// 1: the object layer and its backends.
	"internal/objstore": 1, "internal/radoscli": 1,
	// 2: object classes and what is built directly on them.
	"internal/cls": 2, "internal/bucketindex": 2, "internal/notify/queue": 2, "internal/notify/topic": 2,
	"internal/lifecycle": 2, "internal/notify/config": 2, "internal/notify/push": 2,
	"internal/notify/endpoint": 2, "internal/notify/delivery": 2, "internal/usage": 2,
	// 3: S3 semantics over storage.
	"internal/driver": 3, "internal/reshard": 3, "internal/lcproc": 3, "internal/notify/service": 3,
	"internal/nullgw": 3, "internal/iam": 3, "internal/sts": 3, "internal/accesslog": 3,
	// 4: HTTP.
	"internal/s3api": 4, "internal/notify/api": 4, "internal/notify": 4, "internal/iam/iamapi": 4,
	// 5: wiring, workloads, the binary.
	"internal/server": 5, "internal/bench": 5, "cmd": 5,
}

func layerOf(pkg string) (int, bool) {
	best, layer := "", 0
	for p, l := range layers {
		if (pkg == p || strings.HasPrefix(pkg, p+"/")) && len(p) > len(best) {
			best, layer = p, l
		}
	}
	return layer, best != ""
}

func TestImportsPointDown(t *testing.T) {
	root := "../.."
	imports := map[string]map[string]bool{} // package -> internal imports (non-test files)
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); n == "testdata" || n == "node_modules" || strings.HasPrefix(n, ".") && path != root {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		rel, _ := filepath.Rel(root, filepath.Dir(path))
		if !strings.HasPrefix(rel, "internal") && !strings.HasPrefix(rel, "cmd") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		pkg := filepath.ToSlash(rel)
		if imports[pkg] == nil {
			imports[pkg] = map[string]bool{}
		}
		for _, im := range f.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			if strings.HasPrefix(p, module) {
				imports[pkg][strings.TrimPrefix(p, module)] = true
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(imports) < 30 {
		t.Fatalf("found only %d packages: wrong root?", len(imports))
	}
	var bad []string
	for pkg, ims := range imports {
		lp, ok := layerOf(pkg)
		if !ok {
			bad = append(bad, pkg+": not placed in a layer (add it to layers)")
			continue
		}
		for im := range ims {
			li, ok := layerOf(im)
			if ok && li > lp {
				bad = append(bad, pkg+" (layer "+strconv.Itoa(lp)+") imports "+im+" (layer "+strconv.Itoa(li)+")")
			}
		}
	}
	sort.Strings(bad)
	for _, b := range bad {
		t.Error(b)
	}
}
