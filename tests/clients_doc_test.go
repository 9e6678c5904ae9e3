package tests

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// docBlock is one fenced block of a markdown file: a shell step
// ("```sh"), a file to write ("```LANG file=PATH"), or a block the doc
// marks as not run ("```sh not-executed").
type docBlock struct {
	file        string // file=PATH, "~/" for the scratch HOME
	body        string
	notExecuted bool
}

// docSection is a "## " section's blocks; the blocks before the first
// heading are the preamble, run before every section.
type docSection struct {
	title  string
	blocks []docBlock
}

func parseDocSections(t *testing.T, path string) (preamble []docBlock, sections []docSection) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var cur *docBlock
	var body strings.Builder
	add := func(b docBlock) {
		if len(sections) == 0 {
			preamble = append(preamble, b)
		} else {
			sections[len(sections)-1].blocks = append(sections[len(sections)-1].blocks, b)
		}
	}
	sc := bufio.NewScanner(strings.NewReader(string(raw)))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case cur == nil && strings.HasPrefix(line, "## "):
			sections = append(sections, docSection{title: strings.TrimPrefix(line, "## ")})
		case cur == nil && strings.HasPrefix(line, "```") && len(line) > 3:
			info := strings.Fields(line[3:])
			cur = &docBlock{}
			for _, f := range info[1:] {
				switch {
				case strings.HasPrefix(f, "file="):
					cur.file = strings.TrimPrefix(f, "file=")
				case f == "not-executed":
					cur.notExecuted = true
				default:
					t.Fatalf("%s: unknown block attribute %q in %q", path, f, line)
				}
			}
			if info[0] != "sh" && cur.file == "" && !cur.notExecuted {
				t.Fatalf("%s: a %q block is neither run, nor a file=, nor not-executed", path, line)
			}
			body.Reset()
		case cur != nil && strings.TrimSpace(line) == "```":
			cur.body = body.String()
			add(*cur)
			cur = nil
		case cur != nil:
			body.WriteString(line + "\n")
		}
	}
	if cur != nil {
		t.Fatalf("%s: unterminated block", path)
	}
	return preamble, sections
}

// script turns blocks into bash: files are written with a quoted here
// document, shell steps run as they are; the README's gateway address
// becomes addr.
func docScript(blocks []docBlock, addr string) string {
	var b strings.Builder
	for _, bl := range blocks {
		if bl.notExecuted {
			continue
		}
		body := strings.ReplaceAll(bl.body, "127.0.0.1:7480", addr)
		if bl.file == "" {
			b.WriteString(body + "\n")
			continue
		}
		p := bl.file
		if rest, ok := strings.CutPrefix(p, "~/"); ok {
			p = `"$HOME"/'` + rest + `'`
		} else {
			p = `'` + p + `'`
		}
		b.WriteString("mkdir -p \"$(dirname " + p + ")\"\ncat > " + p + " <<'CAIRN_DOC_EOF'\n" + body + "CAIRN_DOC_EOF\n")
	}
	return b.String()
}

// TestClientsDoc runs docs/clients.md section by section against a real
// gateway with the README's keys, each section in a scratch directory
// with its own HOME (configs go there, never to the caller's), with the
// preamble's profile files. Sections whose client is missing skip,
// unless CAIRN_REQUIRE_CLIENTS=1; mc and warp are the only sections the
// doc may leave unrun, and it must say so.
func TestClientsDoc(t *testing.T) {
	const doc = "../docs/clients.md"
	preamble, sections := parseDocSections(t, doc)
	type client struct {
		tools  [][]string // each: command and arguments that must succeed
		want   []string   // in the section's output
		npmDir string     // gets tests/node's lockfile (seedNodeLock)
	}
	clients := map[string]client{
		"aws CLI": {tools: [][]string{{"aws", "--version"}, {"curl", "--version"}}, want: []string{"hello from the aws CLI"}},
		"boto3": {tools: [][]string{{"python3", "-c", "import boto3, awscrt"}},
			want: []string{"CRC32C ", "CRC64NVME ", "b'hello from boto3'", "presigned PUT: 200\nimage/png\n"}},
		"aws-sdk-go-v2": {tools: [][]string{{"go", "version"}}, want: []string{"hello from aws-sdk-go-v2 (crc32c ", "presigned GET: 200"}},
		"Node SDK (AWS SDK for JavaScript v3)": {tools: [][]string{{"node", "--version"}, {"npm", "--version"}},
			want: []string{"hello from the Node SDK", "presigned GET: 200"}, npmDir: "cairn-node"},
		"rclone":                           {tools: [][]string{{"rclone", "version"}, {"curl", "--version"}}, want: []string{"tree/sub/b c.txt", "one\n"}},
		"s3cmd":                            {tools: [][]string{{"s3cmd", "--version"}, {"curl", "--version"}}, want: []string{"hello from s3cmd\nhello from s3cmd\n"}},
		"mc (MinIO client) — not executed": {},
		"warp (MinIO benchmark) — not executed": {},
	}
	var titles []string
	for _, s := range sections {
		titles = append(titles, s.title)
		c, ok := clients[s.title]
		unrun := slices.ContainsFunc(s.blocks, func(b docBlock) bool { return b.notExecuted })
		switch {
		case !ok:
			t.Errorf("%s: section %q is not known to this test: add it to clients", doc, s.title)
		case unrun != strings.HasSuffix(s.title, "not executed"):
			t.Errorf("%s: section %q: blocks not executed, but the heading does not say so (or the reverse)", doc, s.title)
		case unrun && c.tools != nil:
			t.Errorf("%s: section %q has a client this test runs, but blocks marked not-executed", doc, s.title)
		}
	}
	for title := range clients {
		if !slices.Contains(titles, title) {
			t.Errorf("%s: no section %q", doc, title)
		}
	}
	if t.Failed() {
		return
	}

	g := &Gateway{t: t, DataDir: t.TempDir(), AccessKey: "admin", SecretKey: "adminsecret"}
	g.Start()
	t.Cleanup(g.Stop)
	// The Go toolchain's caches stay where they are (the scratch HOME
	// would start them empty).
	var goEnv []string
	if out, err := exec.Command("go", "env", "GOPATH", "GOMODCACHE", "GOCACHE").Output(); err == nil {
		v := strings.Split(strings.TrimSpace(string(out)), "\n")
		if len(v) == 3 {
			goEnv = []string{"GOPATH=" + v[0], "GOMODCACHE=" + v[1], "GOCACHE=" + v[2]}
		}
	}
	for _, s := range sections {
		c := clients[s.title]
		if c.tools == nil {
			continue
		}
		t.Run(s.title, func(t *testing.T) {
			for _, tool := range c.tools {
				requireTool(t, tool[0], tool[1:]...)
			}
			home := t.TempDir()
			env := []string{"HOME=" + home}
			for _, kv := range os.Environ() {
				if !strings.HasPrefix(kv, "AWS_") && !strings.HasPrefix(kv, "CAIRN_") && !strings.HasPrefix(kv, "HOME=") {
					env = append(env, kv)
				}
			}
			env = append(env, goEnv...)
			dir := t.TempDir()
			if c.npmDir != "" {
				seedNodeLock(t, s.blocks, dir+"/"+c.npmDir)
			}
			script := docScript(preamble, g.Addr) + docScript(s.blocks, g.Addr)
			out, err := runDocScriptEnv(t, dir, script, env)
			if err != nil {
				t.Fatalf("%s: %v\n--- output:\n%s\n--- gateway log tail:\n%s", s.title, err, tail(out, 6000), tail(g.Log.String(), 3000))
			}
			t.Logf("output:\n%s", out)
			for _, w := range c.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q", w)
				}
			}
		})
	}
}

// seedNodeLock puts tests/node's package.json and lockfile into dir
// before the doc's "npm install NAME@VERSION ..." runs there, after
// checking that every package the doc pins is locked at that version.
// Without it npm resolves the SDK's inner ranges against the registry
// of the day, and a registry that lists a release whose dependencies it
// does not yet serve fails the section (ETARGET) with no change of ours.
func seedNodeLock(t *testing.T, blocks []docBlock, dir string) {
	t.Helper()
	lockRaw, err := os.ReadFile("node/package-lock.json")
	if err != nil {
		t.Fatal(err)
	}
	var lock struct {
		Packages map[string]struct{ Version string } `json:"packages"`
	}
	if err := json.Unmarshal(lockRaw, &lock); err != nil {
		t.Fatalf("node/package-lock.json: %v", err)
	}
	pinned := 0
	for _, b := range blocks {
		for _, line := range strings.Split(b.body, "\n") {
			if !strings.HasPrefix(strings.TrimSpace(line), "npm install") {
				continue
			}
			for _, f := range strings.Fields(line) {
				at := strings.LastIndexByte(f, '@')
				if !strings.HasPrefix(f, "@") || at <= 0 {
					if strings.HasPrefix(f, "@") {
						t.Errorf("docs/clients.md: npm installs %s without a version", f)
					}
					continue
				}
				name, ver := f[:at], f[at+1:]
				if got := lock.Packages["node_modules/"+name].Version; got != ver {
					t.Errorf("docs/clients.md pins %s@%s, tests/node/package-lock.json has %q", name, ver, got)
				}
				pinned++
			}
		}
	}
	if pinned == 0 {
		t.Errorf("docs/clients.md: the Node section pins no package version")
	}
	if t.Failed() {
		t.FailNow()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"package.json", "package-lock.json"} {
		raw, err := os.ReadFile("node/" + f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dir+"/"+f, raw, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
