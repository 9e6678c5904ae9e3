package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/cairn-s3/cairn/internal/objstore"
	"github.com/cairn-s3/cairn/internal/objstore/embedded"
	"github.com/cairn-s3/cairn/internal/radoscli"
	"github.com/cairn-s3/cairn/internal/server"
)

func runRados(args []string) int {
	for _, a := range args {
		if a == "-h" || a == "--help" || a == "-help" {
			args = []string{"--help"} // help is local, with or without --endpoint
			break
		}
	}
	if ep, rest, ok := cutFlag(args, "endpoint"); ok {
		// The gateway parses the command; refuse unknown flags here, as
		// the local form does, rather than after a round trip.
		for _, a := range rest {
			name, _, _ := strings.Cut(a, "=")
			if a == "--" {
				break
			}
			if strings.HasPrefix(a, "-") && a != "-" && !valueFlags[name] {
				fmt.Fprintf(os.Stderr, "cairn rados: flag provided but not defined: %s\nRun 'cairn rados --help' for usage.\n", name)
				return 2
			}
		}
		return runRadosRemote(ep, rest)
	}
	return radoscli.Run(context.Background(), args, radoscli.Env{
		Open: openDataDir, Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr,
	})
}

// cutFlag removes --name VALUE / --name=VALUE from args.
func cutFlag(args []string, name string) (string, []string, bool) {
	for i, a := range args {
		for _, p := range []string{"--" + name, "-" + name} {
			if a == p && i+1 < len(args) {
				return args[i+1], append(append([]string{}, args[:i]...), args[i+2:]...), true
			}
			if v, ok := strings.CutPrefix(a, p+"="); ok {
				return v, append(append([]string{}, args[:i]...), args[i+1:]...), true
			}
		}
	}
	return "", args, false
}

// valueFlags take a value, so the verb is the first word not after one.
var valueFlags = map[string]bool{"--pool": true, "-pool": true, "-p": true, "--namespace": true, "-namespace": true, "-N": true, "--data-dir": true, "-data-dir": true}

// runRadosRemote runs the command inside a running gateway (POST
// /admin/rados), so it works while the gateway holds the data directory.
// put/get FILE arguments stay local: contents travel in the request and
// response.
func runRadosRemote(endpoint string, args []string) int {
	var pos []int
	for i := 0; i < len(args); i++ {
		if valueFlags[args[i]] {
			i++
			continue
		}
		if !strings.HasPrefix(args[i], "-") {
			pos = append(pos, i)
		}
	}
	req := server.RadosRequest{Args: append([]string{}, args...)}
	var outFile string
	if len(pos) >= 3 {
		verb, fileIdx := args[pos[0]], pos[2]
		switch {
		case verb == "put" && args[fileIdx] != "-":
			b, err := os.ReadFile(args[fileIdx])
			if err != nil {
				fmt.Fprintln(os.Stderr, "cairn rados put:", err)
				return 1
			}
			req.Stdin, req.Args[fileIdx] = b, "-"
		case verb == "put":
			b, _ := io.ReadAll(os.Stdin)
			req.Stdin = b
		case verb == "get" && args[fileIdx] != "-":
			outFile, req.Args[fileIdx] = args[fileIdx], "-"
		}
	}
	ak, sk := os.Getenv("CAIRN_ACCESS_KEY"), os.Getenv("CAIRN_SECRET_KEY")
	if ak == "" || sk == "" {
		fmt.Fprintln(os.Stderr, "cairn rados --endpoint: set CAIRN_ACCESS_KEY and CAIRN_SECRET_KEY (admin keys)")
		return 2
	}
	body, _ := json.Marshal(req)
	raw, status, err := adminCallBody(context.Background(), endpoint, ak, sk, "POST", "/admin/rados", nil, body)
	if err != nil {
		fmt.Fprintln(os.Stderr, "cairn rados:", err)
		return 1
	}
	if status != 200 {
		fmt.Fprintf(os.Stderr, "cairn rados: HTTP %d: %s\n", status, raw)
		return 1
	}
	var resp server.RadosResponse
	if err := json.Unmarshal(raw, &resp); err != nil {
		fmt.Fprintln(os.Stderr, "cairn rados: bad response:", err)
		return 1
	}
	os.Stderr.Write(resp.Stderr)
	if outFile != "" && resp.Exit == 0 {
		if err := os.WriteFile(outFile, resp.Stdout, 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "cairn rados get:", err)
			return 1
		}
	} else {
		os.Stdout.Write(resp.Stdout)
	}
	return resp.Exit
}

// openDataDir opens the embedded store a gateway keeps in
// <data-dir>/store (server.StoreDir), with the gateway's classes.
func openDataDir(dataDir string, create bool) (objstore.Store, error) {
	privateUmask()
	dir := server.StoreDir(dataDir)
	if _, err := os.Stat(dir); err != nil && !create {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("no Cairn data directory at %s (%s does not exist; set --data-dir)", dataDir, dir)
		}
		return nil, err
	}
	st, err := embedded.Open(embedded.Options{Dir: dir, Classes: server.Classes()})
	if err != nil {
		if strings.Contains(err.Error(), "held by another process") {
			return nil, fmt.Errorf("data directory %s is in use, probably by a running gateway: stop it first or use --endpoint URL: %w", dataDir, err)
		}
		return nil, fmt.Errorf("open data directory %s: %w", dataDir, err)
	}
	return st, nil
}
