package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"

	"github.com/cairn-s3/cairn/internal/buildinfo"
)

// runVersion prints which build this is (`cairn version`, `cairn --version`).
func runVersion(args []string) int {
	fs := flag.NewFlagSet("cairn version", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	asJSON := fs.Bool("json", false, "print {\"version\", \"commit\", \"go_version\"} as JSON")
	help := func(w io.Writer) {
		fmt.Fprint(w, "usage: cairn version [--json]   (or: cairn --version)\n\nPrints the version, commit and Go version of this binary.\n\n")
		printFlags(w, fs)
	}
	err := fs.Parse(args)
	if err == nil && fs.NArg() > 0 {
		err = fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if err != nil {
		return usageError("cairn version", err, help)
	}
	bi := buildinfo.Get()
	if *asJSON {
		b, _ := json.Marshal(bi)
		fmt.Println(string(b))
		return 0
	}
	fmt.Println(bi)
	return 0
}
