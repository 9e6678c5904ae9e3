package server_test

import (
	"context"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/cairn-s3/cairn/internal/config"
	"github.com/cairn-s3/cairn/internal/s3err"
	"github.com/cairn-s3/cairn/internal/server"
)

// The compatibility table (docs/s3-compatibility.md) is checked against the
// router of a fully wired gateway (extension routes such as ?notification
// included): each row's request routes to its operation, or to
// NotImplemented naming it when the row says "not implemented"; every
// operation the router names has a row; rows are sorted and unique.

const compatDoc = "../../docs/s3-compatibility.md"

type compatRow struct {
	line    int
	op      string
	request string // "" for "-"
	status  string
}

var rowRe = regexp.MustCompile("^\\| *([A-Za-z0-9]+) *\\| *(`[^`]*`|-) *\\| *(supported|partial|not implemented) *\\|.*\\|$")

func parseCompatTable(t *testing.T) []compatRow {
	t.Helper()
	data, err := os.ReadFile(compatDoc)
	if err != nil {
		t.Fatal(err)
	}
	var rows []compatRow
	in := false
	for i, line := range strings.Split(string(data), "\n") {
		switch {
		case strings.HasPrefix(line, "## "):
			in = line == "## Operations"
			continue
		case !in || !strings.HasPrefix(line, "|") || strings.HasPrefix(line, "| operation ") || strings.HasPrefix(line, "|---"):
			continue
		}
		m := rowRe.FindStringSubmatch(line)
		if m == nil {
			t.Errorf("%s:%d: malformed row (want | Operation | `METHOD /path?query hdr:v` or - | supported/partial/not implemented | notes |): %s", compatDoc, i+1, line)
			continue
		}
		rows = append(rows, compatRow{line: i + 1, op: m[1], request: strings.Trim(m[2], "`-"), status: m[3]})
	}
	if len(rows) < 50 {
		t.Fatalf("only %d operation rows parsed", len(rows))
	}
	return rows
}

func compatGateway(t *testing.T) *server.Gateway {
	t.Helper()
	env := map[string]string{"CAIRN_ACCESS_KEY": "compatadmin", "CAIRN_SECRET_KEY": "compatsecret123"}
	cfg, err := config.Load([]string{"--data-dir", t.TempDir(), "--log-level", "error"}, func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	g, err := server.Open(context.Background(), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.Close)
	return g
}

// compatRequest builds "METHOD /path?query hdr:value ...".
func compatRequest(t *testing.T, spec string) *http.Request {
	t.Helper()
	f := strings.Fields(spec)
	if len(f) < 2 {
		t.Fatalf("bad request %q", spec)
	}
	r := httptest.NewRequest(f[0], "http://127.0.0.1:7480"+f[1], nil)
	for _, h := range f[2:] {
		k, v, ok := strings.Cut(h, ":")
		if !ok {
			t.Fatalf("bad header %q in %q", h, spec)
		}
		r.Header.Set(k, v)
	}
	return r
}

func isNotImplemented(err error) bool { return errors.Is(err, s3err.ErrNotImplemented) }

func TestCompatibilityTable(t *testing.T) {
	rows := parseCompatTable(t)
	g := compatGateway(t)
	byOp := map[string]compatRow{}
	for i, r := range rows {
		if i > 0 && rows[i-1].op >= r.op {
			t.Errorf("%s:%d: %s is out of order or repeated (rows are sorted by operation)", compatDoc, r.line, r.op)
		}
		byOp[r.op] = r
		if r.request == "" {
			continue
		}
		op, err := g.API.Operation(compatRequest(t, r.request))
		switch r.status {
		case "not implemented":
			if !isNotImplemented(err) || op != r.op {
				t.Errorf("%s:%d: %s is marked not implemented, but %q routes to %q (err %v)", compatDoc, r.line, r.op, r.request, op, err)
			} else if !strings.Contains(err.Error(), r.op) {
				t.Errorf("%s:%d: NotImplemented for %s does not name the operation: %v", compatDoc, r.line, r.op, err)
			}
		default:
			if err != nil || op != r.op {
				t.Errorf("%s:%d: %s is marked %s, but %q routes to %q (err %v)", compatDoc, r.line, r.op, r.status, r.request, op, err)
			}
		}
	}

	// Every operation the router names has a row with a matching status:
	// the operation names written in router.go, and what a broad set of
	// requests (every method, level, query parameter the router mentions
	// and header it branches on) routes to.
	seen := map[string]string{}
	for _, op := range routerOpLiterals(t) {
		seen[op] = "router.go"
	}
	generic := map[string]bool{"Bucket": true, "Object": true, "Service": true, "Admin": true, "SNS": true, "Unknown": true}
	reported := map[string]bool{}
	for _, spec := range probeRequests(t) {
		op, err := g.API.Operation(compatRequest(t, spec))
		// Generic names, other errors, subresources S3 does not define at
		// that level ("GET ?cors" on an object) and operations already
		// reported are skipped.
		if generic[op] || strings.Contains(op, "?") || (err != nil && !isNotImplemented(err)) || reported[op] {
			continue
		}
		row, ok := byOp[op]
		switch {
		case !ok:
			t.Errorf("%q routes to %s, which has no row in %s", spec, op, compatDoc)
		case err == nil && row.status == "not implemented":
			t.Errorf("%q is served as %s, but %s:%d says not implemented", spec, op, compatDoc, row.line)
		case err != nil && row.status != "not implemented":
			t.Errorf("%q answers NotImplemented for %s, but %s:%d says %s", spec, op, compatDoc, row.line, row.status)
		}
		seen[op] = spec
		if t.Failed() {
			reported[op] = true
		}
	}
	for op, where := range seen {
		if _, ok := byOp[op]; !ok && !generic[op] {
			t.Errorf("operation %s (%s) has no row in %s", op, where, compatDoc)
		}
	}
}

// routerOpLiterals returns the operation names router.go writes as string
// literals: first arguments of scoped(...) and op: fields of route values.
func routerOpLiterals(t *testing.T) []string {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, filepath.Join("..", "s3api", "router.go"), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var ops []string
	lit := func(e ast.Expr) {
		if bl, ok := e.(*ast.BasicLit); ok && bl.Kind == token.STRING {
			if s, err := strconv.Unquote(bl.Value); err == nil {
				ops = append(ops, s)
			}
		}
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.CallExpr:
			if id, ok := n.Fun.(*ast.Ident); ok && id.Name == "scoped" && len(n.Args) > 0 {
				lit(n.Args[0])
			}
		case *ast.KeyValueExpr:
			if id, ok := n.Key.(*ast.Ident); ok && id.Name == "op" {
				lit(n.Value)
			}
		}
		return true
	})
	if len(ops) < 10 {
		t.Fatalf("found only %d operation names in router.go", len(ops))
	}
	return ops
}

// probeRequests crosses methods, levels, query parameters (every string
// literal in router.go and operations.go that looks like one, plus the
// table's) and the headers the router branches on.
func probeRequests(t *testing.T) []string {
	t.Helper()
	params := map[string]bool{"uploads": true, "uploadId=u": true, "partNumber=1": true, "list-type=2": true, "delete": true}
	word := regexp.MustCompile(`^[a-zA-Z][a-zA-Z-]{1,40}$`)
	for _, file := range []string{"router.go", "operations.go"} {
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, filepath.Join("..", "s3api", file), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if bl, ok := n.(*ast.BasicLit); ok && bl.Kind == token.STRING {
				if s, err := strconv.Unquote(bl.Value); err == nil && word.MatchString(s) && !strings.HasPrefix(strings.ToLower(s), "x-amz") {
					params[s] = true
				}
			}
			return true
		})
	}
	keys := make([]string, 0, len(params))
	for k := range params {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	queries := append([]string{""}, keys...)
	headers := []string{"", " x-amz-copy-source:/src/k", " Content-Type:multipart/form-data;boundary=x", " Origin:http://a.example Access-Control-Request-Method:PUT"}
	var out []string
	for _, m := range []string{"GET", "HEAD", "PUT", "POST", "DELETE", "OPTIONS"} {
		for _, path := range []string{"/", "/b", "/b/k"} {
			for _, q := range queries {
				for _, h := range headers {
					if path == "/" && q != "" {
						continue // service level: SNS and ListBuckets only
					}
					p := path
					if q != "" {
						p += "?" + q
					}
					out = append(out, m+" "+p+h)
				}
			}
		}
	}
	return slices.Compact(out)
}
