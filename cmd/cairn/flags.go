package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
)

// quiet makes fs return its errors instead of printing them with the whole
// usage; callers report them with usageError and print help on ErrHelp.
func quiet(fs *flag.FlagSet) *flag.FlagSet {
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// usageError reports a flag error: exit 0 after printing help for
// -h/--help (to stdout), else one line and a hint on stderr, exit 2.
func usageError(cmd string, err error, help func(io.Writer)) int {
	if errors.Is(err, flag.ErrHelp) {
		help(os.Stdout)
		return 0
	}
	fmt.Fprintf(os.Stderr, "%s: %v\nRun '%s --help' for usage.\n", cmd, err, cmd)
	return 2
}

// printFlags lists fs's flags with their type and default, like
// flag.PrintDefaults but with "--" and types for every flag.
func printFlags(w io.Writer, fs *flag.FlagSet) {
	fs.VisitAll(func(f *flag.Flag) {
		kind, usage := flag.UnquoteUsage(f)
		if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
			kind = "bool"
		}
		if t, ok := f.Value.(interface{ Type() string }); ok {
			kind = t.Type()
		}
		if kind == "" {
			kind = "value"
		}
		def := ""
		if f.DefValue != "" {
			def = fmt.Sprintf(" (default %s)", f.DefValue)
		}
		fmt.Fprintf(w, "  --%s %s\n        %s%s\n", f.Name, kind, usage, def)
	})
}

// humanDurations renders time.Duration log attributes as "30s" instead of
// nanoseconds.
func humanDurations(_ []string, a slog.Attr) slog.Attr {
	if a.Value.Kind() == slog.KindDuration {
		return slog.String(a.Key, a.Value.Duration().String())
	}
	return a
}

// intText is a flag holding a non-negative integer as text (admin
// parameters passed through as query strings); it is refused at parse
// time when it is not one, and shown as "int" in --help.
type intText struct{ v string }

func (f *intText) String() string { return f.v }
func (f *intText) Type() string   { return "int" }
func (f *intText) Set(s string) error {
	if n, err := strconv.Atoi(s); err != nil || n < 0 {
		return fmt.Errorf("%q is not a non-negative integer", s)
	}
	f.v = s
	return nil
}
