// Command cairn is the Cairn S3 gateway: serve, admin, rados and bench.
package main

import (
	"fmt"
	"os"
)

const usage = `usage: cairn <command> [flags]

commands:
  serve   run the S3 gateway (embedded backend by default)
  admin   talk to a running gateway's admin API (users, buckets, reshard, topics)
  rados   inspect the object layer (pools, objects, xattrs, omap)
  bench   run benchmark workloads
  version print the version, commit and Go version (also: cairn --version)
`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	cmd, args := os.Args[1], os.Args[2:]
	var code int
	switch cmd {
	case "serve":
		code = runServe(args)
	case "admin":
		code = runAdmin(args)
	case "rados":
		code = runRados(args)
	case "bench":
		code = runBench(args)
	case "version", "--version", "-version":
		code = runVersion(args)
	case "help", "-h", "--help":
		fmt.Print(usage)
	default:
		fmt.Fprintf(os.Stderr, "cairn: unknown command %q\nRun 'cairn --help' for usage.\n", cmd)
		code = 2
	}
	os.Exit(code)
}
