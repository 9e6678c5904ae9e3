package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"encoding/xml"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

const adminUsage = `usage: cairn admin [--endpoint URL] <noun> <verb> [flags]

  (a tenant's user is --uid 'T$U' or --tenant T --uid U; its bucket --bucket T/B or
   --tenant T --bucket B; its topic --tenant T --topic N, as radosgw-admin)
  user create --uid U [--display-name N] [--email E] [--access-key K --secret S] [--admin] [--max-buckets N]
  user create --uid U --account-id ID [--account-root] [--display-name N] [--email E]
  user info --uid U | user list [--tenant T] | user rm --uid U | user stats --uid U
  account create --account-name N [--email E] [--account-id ID] [--tenant T]
  account info --account-id ID | --account-name N [--tenant T] | account list [--tenant T]
  account rm --account-id ID | --account-name N [--tenant T]
  bucket list [--uid U] | bucket stats --bucket B
  bucket check --bucket B [--fix]   (the ordered index view against the shards; --fix repairs or builds it)
  bucket list --bucket B [--max-entries N] [--marker KEY]   (the bucket's index entries, every version)
  bucket create --bucket B --uid OWNER [--num-shards N]
  bucket reshard --bucket B --num-shards N
  bucket logging flush --bucket B | bucket logging info --bucket B
  reshard list | reshard status --bucket B | reshard cancel --bucket B
  lc list | lc status --bucket B | lc process --bucket B
  gc list [--include-all] | gc process [--include-all]
  orphans find [--min-age DURATION] [--max-entries N] | orphans rm [--min-age DURATION]
  topic list | topic get --topic T | topic stats --topic T
  topic dump --topic T [--max-entries N] [--marker M] | topic rm --topic T
  notification list --bucket B | notification get --bucket B --notification-id ID
  notification rm --bucket B [--notification-id ID]
  quota set|enable|disable|get --quota-scope user|bucket --uid U [--bucket B] [--max-objects N] [--max-size BYTES]
  ratelimit set|enable|disable|get --ratelimit-scope user|bucket [--uid U] [--bucket B]
      [--max-read-ops N] [--max-write-ops N] [--max-read-bytes N] [--max-write-bytes N]   (per minute; 0 = unlimited)
  usage show [--uid U] [--start-date D] [--end-date D] [--show-log-entries=false] [--show-log-sum=false]
  usage trim [--uid U] [--start-date D] [--end-date D] [--yes-i-really-mean-it (all users)]
  kms create-key --key-id K | kms rotate-key --key-id K | kms reseal
  kms rewrap --bucket B

Signs requests with CAIRN_ACCESS_KEY / CAIRN_SECRET_KEY (or --access-key-id /
--secret-access-key) and prints the JSON the gateway returns.
`

// adminRoute maps a CLI noun+verb to the admin REST API (internal/s3api/admin.go
// and the routes other packages register).
type adminRoute struct {
	method, path, verbParam string
	required                []string
}

var adminRoutes = map[string]adminRoute{
	"user create":          {http.MethodPut, "/admin/user", "", []string{"uid"}},
	"user info":            {http.MethodGet, "/admin/user", "", []string{"uid"}},
	"user list":            {http.MethodGet, "/admin/user", "list", nil},
	"user rm":              {http.MethodDelete, "/admin/user", "", []string{"uid"}},
	"user stats":           {http.MethodGet, "/admin/user", "stats", []string{"uid"}},
	"account create":       {http.MethodPut, "/admin/account", "", []string{"account-name"}},
	"account info":         {http.MethodGet, "/admin/account", "info", nil},
	"account list":         {http.MethodGet, "/admin/account", "list", nil},
	"account rm":           {http.MethodDelete, "/admin/account", "", nil},
	"bucket list":          {http.MethodGet, "/admin/bucket", "", nil},
	"bucket stats":         {http.MethodGet, "/admin/bucket", "stats", []string{"bucket"}},
	"bucket check":         {http.MethodGet, "/admin/bucket", "check", []string{"bucket"}},
	"bucket create":        {http.MethodPut, "/admin/bucket", "", []string{"bucket", "uid"}},
	"bucket reshard":       {http.MethodPost, "/admin/reshard", "", []string{"bucket", "num-shards"}},
	"bucket logging flush": {http.MethodPost, "/admin/bucket", "logging", []string{"bucket"}},
	"bucket logging info":  {http.MethodGet, "/admin/bucket", "logging", []string{"bucket"}},
	"reshard list":         {http.MethodGet, "/admin/reshard", "list", nil},
	"reshard status":       {http.MethodGet, "/admin/reshard", "status", []string{"bucket"}},
	"reshard cancel":       {http.MethodDelete, "/admin/reshard", "", []string{"bucket"}},
	"lc list":              {http.MethodGet, "/admin/lc", "list", nil},
	"lc status":            {http.MethodGet, "/admin/lc", "status", []string{"bucket"}},
	"lc process":           {http.MethodPost, "/admin/lc", "", []string{"bucket"}},
	"gc list":              {http.MethodGet, "/admin/gc", "list", nil},
	"gc process":           {http.MethodPost, "/admin/gc", "process", nil},
	"orphans find":         {http.MethodGet, "/admin/orphans", "", nil},
	"orphans rm":           {http.MethodDelete, "/admin/orphans", "", nil},
	"topic list":           {http.MethodGet, "/admin/topic", "list", nil},
	"topic get":            {http.MethodGet, "/admin/topic", "get", []string{"topic"}},
	"topic stats":          {http.MethodGet, "/admin/topic", "stats", []string{"topic"}},
	"topic dump":           {http.MethodGet, "/admin/topic", "dump", []string{"topic"}},
	"topic rm":             {http.MethodDelete, "/admin/topic", "", []string{"topic"}},
	"notification list":    {http.MethodGet, "/admin/notification", "list", []string{"bucket"}},
	"notification get":     {http.MethodGet, "/admin/notification", "get", []string{"bucket", "notification-id"}},
	"notification rm":      {http.MethodDelete, "/admin/notification", "", []string{"bucket"}},
	"kms create-key":       {http.MethodPost, "/admin/kms", "create-key", []string{"key-id"}},
	"kms rotate-key":       {http.MethodPost, "/admin/kms", "rotate-key", []string{"key-id"}},
	"kms reseal":           {http.MethodPost, "/admin/kms", "reseal", nil},
	"kms rewrap":           {http.MethodPost, "/admin/kms", "rewrap", []string{"bucket"}},
	// Quotas: scope bucket with --bucket is that bucket's own quota,
	// otherwise the user's (see quotaPath).
	"quota set":         {http.MethodPut, "/admin/user", "quota", []string{"quota-scope"}},
	"quota enable":      {http.MethodPut, "/admin/user", "quota", []string{"quota-scope"}},
	"quota disable":     {http.MethodPut, "/admin/user", "quota", []string{"quota-scope"}},
	"quota get":         {http.MethodGet, "/admin/user", "quota", []string{"quota-scope"}},
	"ratelimit set":     {http.MethodPost, "/admin/ratelimit", "", []string{"ratelimit-scope"}},
	"ratelimit enable":  {http.MethodPost, "/admin/ratelimit", "", []string{"ratelimit-scope"}},
	"ratelimit disable": {http.MethodPost, "/admin/ratelimit", "", []string{"ratelimit-scope"}},
	"ratelimit get":     {http.MethodGet, "/admin/ratelimit", "", []string{"ratelimit-scope"}},
	"usage show":        {http.MethodGet, "/admin/usage", "", nil},
	"usage trim":        {http.MethodDelete, "/admin/usage", "", nil},
}

// adminParamNames renames flags whose query parameter differs (RGW's
// admin API names).
var adminParamNames = map[string]string{
	"secret": "secret-key", "quota-scope": "quota-type", "start-date": "start", "end-date": "end",
	"show-log-entries": "show-entries", "show-log-sum": "show-summary",
}

// adminParams are the flags passed through as query parameters.
var adminParams = []string{"uid", "tenant", "display-name", "email", "access-key", "secret", "max-buckets", "bucket", "num-shards",
	"topic", "max-entries", "marker", "notification-id", "key-id", "account-name", "account-id",
	"quota-scope", "max-objects", "max-size", "ratelimit-scope", "max-read-ops", "max-write-ops", "max-read-bytes", "max-write-bytes",
	"start-date", "end-date", "show-log-entries", "show-log-sum", "min-age"}

func runAdmin(args []string) int {
	fs := quiet(flag.NewFlagSet("admin", flag.ContinueOnError))
	help := func(w io.Writer) {
		fmt.Fprint(w, adminUsage, "\nflags:\n")
		printFlags(w, fs)
	}
	endpoint := fs.String("endpoint", envOr("CAIRN_ENDPOINT", "http://127.0.0.1:7480"), "gateway URL")
	// Env defaults are applied after parsing so --help never prints a secret.
	ak := fs.String("access-key-id", "", "admin access key (default $CAIRN_ACCESS_KEY)")
	sk := fs.String("secret-access-key", "", "admin secret key (default $CAIRN_SECRET_KEY)")
	admin := fs.Bool("admin", false, "user create: make the user an admin")
	sure := fs.Bool("yes-i-really-mean-it", false, "usage trim: without --uid, trim every user's usage")
	acctRoot := fs.Bool("account-root", false, "user create: make the user its account's root user")
	includeAll := fs.Bool("include-all", false, "gc list|process: also the records gc-min-wait still holds back")
	fix := fs.Bool("fix", false, "bucket check: repair the bucket's ordered index view from its shards (build one for a bucket without)")
	vals := map[string]*string{}
	for _, p := range adminParams {
		if p == "num-shards" || p == "max-entries" {
			v := &intText{}
			fs.Var(v, p, adminParamHelp[p])
			vals[p] = &v.v
			continue
		}
		vals[p] = fs.String(p, "", adminParamHelp[p])
	}
	// Flags may come before or after noun and verb.
	var words []string
	rest := args
	for {
		if err := fs.Parse(rest); err != nil {
			return usageError("cairn admin", err, help)
		}
		if fs.NArg() == 0 {
			break
		}
		words = append(words, fs.Arg(0))
		rest = fs.Args()[1:]
	}
	if len(words) == 3 && words[0] == "bucket" && words[1] == "logging" {
		words = []string{"bucket", "logging " + words[2]} // radosgw-admin's three-word command
	}
	if len(words) != 2 {
		if len(words) == 0 {
			fmt.Fprintln(os.Stderr, "cairn admin: missing <noun> <verb>")
		} else {
			fmt.Fprintf(os.Stderr, "cairn admin: want <noun> <verb>, got %q\n", strings.Join(words, " "))
		}
		fmt.Fprintln(os.Stderr, "Run 'cairn admin --help' for usage.")
		return 2
	}
	if *ak == "" {
		*ak = os.Getenv("CAIRN_ACCESS_KEY")
	}
	if *sk == "" {
		*sk = os.Getenv("CAIRN_SECRET_KEY")
	}
	key := words[0] + " " + words[1]
	rt, ok := adminRoutes[key]
	if !ok {
		fmt.Fprintf(os.Stderr, "cairn admin: unknown command %q\nRun 'cairn admin --help' for usage.\n", key)
		return 2
	}
	q := url.Values{}
	if rt.verbParam != "" {
		q.Set(rt.verbParam, "")
	}
	for _, p := range adminParams {
		if v := *vals[p]; v != "" {
			name := p
			if n, ok := adminParamNames[p]; ok {
				name = n
			}
			q.Set(name, v)
		}
	}
	if *admin {
		q.Set("admin", "true")
	}
	if *acctRoot {
		q.Set("account-root", "true")
	}
	if *includeAll {
		q.Set("include-all", "true")
	}
	path := rt.path
	switch words[0] {
	case "quota":
		if q.Get("quota-type") == "bucket" && q.Get("bucket") != "" {
			path = "/admin/bucket"
		} else if q.Get("uid") == "" {
			fmt.Fprintf(os.Stderr, "cairn admin %s: --uid is required (or --quota-scope bucket --bucket B)\n", key)
			return 2
		}
	case "usage":
		if words[1] == "trim" && q.Get("uid") == "" {
			if !*sure {
				fmt.Fprintln(os.Stderr, "cairn admin usage trim: without --uid this trims every user's usage; add --yes-i-really-mean-it")
				return 2
			}
			q.Set("remove-all", "true")
		}
	}
	switch words[1] {
	case "enable":
		q.Set("enabled", "true")
	case "disable":
		q.Set("enabled", "false")
	}
	for _, r := range rt.required {
		if *vals[r] == "" {
			fmt.Fprintf(os.Stderr, "cairn admin %s: --%s is required\n", key, r)
			return 2
		}
	}
	if *ak == "" || *sk == "" {
		fmt.Fprintln(os.Stderr, "cairn admin: set CAIRN_ACCESS_KEY and CAIRN_SECRET_KEY (the keys the gateway was first started with; generated ones are in <data-dir>/admin.credentials)")
		return 2
	}
	if key == "bucket list" && q.Get("bucket") != "" {
		return adminListObjects(*endpoint, *ak, *sk, q)
	}
	method := rt.method
	if *fix && key == "bucket check" {
		method = http.MethodPost // a repair writes
		q.Set("fix", "true")
	}
	body, status, err := adminCall(context.Background(), *endpoint, *ak, *sk, method, path, q)
	if err != nil {
		writeAdminError(os.Stderr, adminError{Code: "ConnectionError", Message: err.Error()})
		return 1
	}
	if status >= 300 {
		writeAdminError(os.Stderr, parseAdminError(status, body))
		return 1
	}
	var pretty bytes.Buffer
	if json.Indent(&pretty, body, "", "  ") == nil {
		pretty.WriteByte('\n')
		os.Stdout.Write(pretty.Bytes())
	} else {
		os.Stdout.Write(body)
	}
	return 0
}

// adminCall sends one SigV4-signed admin request and returns the body.
func adminCall(ctx context.Context, endpoint, ak, sk, method, path string, q url.Values) ([]byte, int, error) {
	return adminCallBody(ctx, endpoint, ak, sk, method, path, q, nil)
}

// adminCallBody is adminCall with a request body.
func adminCallBody(ctx context.Context, endpoint, ak, sk, method, path string, q url.Values, body []byte) ([]byte, int, error) {
	u := strings.TrimSuffix(endpoint, "/") + path
	if len(q) > 0 {
		u += "?" + strings.ReplaceAll(q.Encode(), "=&", "&")
		u = strings.TrimSuffix(u, "=")
	}
	req, err := http.NewRequestWithContext(ctx, method, u, bytes.NewReader(body))
	if err != nil {
		return nil, 0, err
	}
	sum := sha256.Sum256(body)
	ph := hex.EncodeToString(sum[:])
	req.Header.Set("X-Amz-Content-Sha256", ph)
	creds := aws.Credentials{AccessKeyID: ak, SecretAccessKey: sk}
	if err := v4.NewSigner().SignHTTP(ctx, creds, req, ph, "s3", "us-east-1", time.Now()); err != nil {
		return nil, 0, err
	}
	client := &http.Client{Timeout: adminTimeout(method, path)}
	resp, err := client.Do(req)
	if err != nil {
		return nil, 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return b, resp.StatusCode, err
}

// adminParamHelp documents the pass-through flags in --help.
var adminParamHelp = map[string]string{
	"uid": "user id (\"tenant$uid\" for a tenant's user)", "tenant": "the tenant of --uid, --bucket and --topic (radosgw-admin --tenant)",
	"display-name": "user create: display name", "access-key": "user create: access key",
	"secret": "user create: secret key", "bucket": "bucket name (\"tenant/bucket\" for a tenant's)", "num-shards": "index shards (bucket create, bucket reshard)",
	"topic": "topic name", "max-entries": "topic dump: page size; orphans find: objects listed (default 1000)", "marker": "topic dump: resume after this marker",
	"notification-id": "notification get|rm: the notification's Id",
	"account-name":    "account create|info|rm: the account's name", "account-id": "account info|rm, user create: the account's id (RGW + 17 digits)",
	"quota-scope": "quota: user (the user's total, or with scope bucket and no --bucket its buckets' template) or bucket",
	"max-objects": "quota set: object limit, -1 = none", "max-size": "quota set: size limit in bytes, -1 = none",
	"ratelimit-scope": "ratelimit: user or bucket",
	"max-read-ops":    "ratelimit set: read ops per minute, 0 = unlimited", "max-write-ops": "ratelimit set: write ops per minute, 0 = unlimited",
	"max-read-bytes": "ratelimit set: bytes sent per minute, 0 = unlimited", "max-write-bytes": "ratelimit set: bytes received per minute, 0 = unlimited",
	"start-date": "usage: from this date (YYYY-MM-DD[ HH:MM:SS], UTC)", "end-date": "usage: before this date",
	"min-age":          "orphans find|rm: only data older than this (default: the gateway's orphan-min-age)",
	"show-log-entries": "usage show: false omits the per-bucket entries", "show-log-sum": "usage show: false omits the summary",
}

// adminError is the one shape every `cairn admin` failure is printed in
// (on stderr), the gateway's admin error JSON (RGW's admin API shape).
type adminError struct {
	Code       string `json:"Code"`
	Message    string `json:"Message,omitempty"`
	HTTPStatus int    `json:"HttpStatus,omitempty"`
	RequestID  string `json:"RequestId,omitempty"`
	HostID     string `json:"HostId,omitempty"`
}

// parseAdminError reads the gateway's JSON error, or an S3 XML error (a
// proxy, or an older gateway), into adminError.
func parseAdminError(status int, body []byte) adminError {
	var e adminError
	if json.Unmarshal(body, &e) == nil && e.Code != "" {
		e.HTTPStatus = status
		return e
	}
	var x struct {
		Code      string `xml:"Code"`
		Message   string `xml:"Message"`
		RequestID string `xml:"RequestId"`
		HostID    string `xml:"HostId"`
	}
	if xml.Unmarshal(body, &x) == nil && x.Code != "" {
		return adminError{Code: x.Code, Message: x.Message, HTTPStatus: status, RequestID: x.RequestID, HostID: x.HostID}
	}
	return adminError{Code: http.StatusText(status), Message: strings.TrimSpace(string(body)), HTTPStatus: status}
}

func writeAdminError(w io.Writer, e adminError) {
	b, _ := json.MarshalIndent(e, "", "  ")
	fmt.Fprintf(w, "%s\n", b)
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// adminListObjects prints `bucket list --bucket B` as radosgw-admin does: a
// JSON array of every index entry (up to --max-entries), paging through
// the gateway a thousand at a time and writing each entry as it comes, so
// a bucket of millions needs no memory here.
func adminListObjects(endpoint, ak, sk string, q url.Values) int {
	limit := -1
	if v := q.Get("max-entries"); v != "" {
		limit, _ = strconv.Atoi(v) // intText checked it
	}
	out := bufio.NewWriterSize(os.Stdout, 1<<16)
	defer out.Flush()
	out.WriteString("[")
	n := 0
	for limit < 0 || n < limit {
		page := 1000
		if limit >= 0 {
			page = min(page, limit-n)
		}
		q.Set("objects", "")
		q.Set("max-entries", strconv.Itoa(page))
		body, status, err := adminCall(context.Background(), endpoint, ak, sk, http.MethodGet, "/admin/bucket", q)
		if err != nil {
			out.Flush()
			writeAdminError(os.Stderr, adminError{Code: "ConnectionError", Message: err.Error()})
			return 1
		}
		if status >= 300 {
			out.Flush()
			writeAdminError(os.Stderr, parseAdminError(status, body))
			return 1
		}
		var res struct {
			Entries             []json.RawMessage `json:"entries"`
			IsTruncated         bool              `json:"is_truncated"`
			NextMarker          string            `json:"next_marker"`
			NextVersionIDMarker string            `json:"next_version_id_marker"`
		}
		if err := json.Unmarshal(body, &res); err != nil {
			out.Flush()
			fmt.Fprintf(os.Stderr, "cairn admin bucket list: %v\n", err)
			return 1
		}
		for _, e := range res.Entries {
			if n > 0 {
				out.WriteString(",")
			}
			out.WriteString("\n  ")
			out.Write(e)
			n++
		}
		if !res.IsTruncated || len(res.Entries) == 0 {
			break
		}
		q.Set("marker", res.NextMarker)
		q.Set("version-id-marker", res.NextVersionIDMarker)
	}
	out.WriteString("\n]\n")
	return 0
}

// adminTimeout bounds an admin call; the commands that do their work
// before answering (a reshard of a large bucket, a lifecycle or GC pass,
// an orphan scan, a KMS rewrap) wait as long as it takes, as
// radosgw-admin's do: a 30M-object reshard runs for many minutes.
func adminTimeout(method, path string) time.Duration {
	if method == http.MethodGet && path != "/admin/orphans" {
		return 60 * time.Second
	}
	switch path {
	case "/admin/reshard", "/admin/lc", "/admin/gc", "/admin/orphans", "/admin/kms":
		return 0
	}
	return 60 * time.Second
}
