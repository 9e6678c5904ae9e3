package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/cairn-s3/cairn/internal/objstore"
	"github.com/cairn-s3/cairn/internal/objstore/embedded"
	"github.com/cairn-s3/cairn/internal/radoscli"
	"github.com/cairn-s3/cairn/internal/server"
)

func runRados(args []string) int {
	return radoscli.Run(context.Background(), args, radoscli.Env{
		Open: openDataDir, Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr,
	})
}

// openDataDir opens the embedded store a gateway keeps in
// <data-dir>/store (server.StoreDir), with the gateway's classes.
func openDataDir(dataDir string, create bool) (objstore.Store, error) {
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
			return nil, fmt.Errorf("data directory %s is in use, probably by a running gateway: stop it first (or use --endpoint once available): %w", dataDir, err)
		}
		return nil, fmt.Errorf("open data directory %s: %w", dataDir, err)
	}
	return st, nil
}
