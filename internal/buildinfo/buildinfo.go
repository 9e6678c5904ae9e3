// Package buildinfo says which Cairn this is: version, commit and Go
// version, for `cairn version`, the start-up log line and the
// cairn_build_info metric.
package buildinfo

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Set by the Makefile with -ldflags "-X ...=": the only package variables
// here, written by the linker and never at run time.
var (
	version string
	commit  string
)

// Info identifies a build.
type Info struct {
	Version   string `json:"version"`    // the -ldflags value (git describe), else the module version, else "devel"
	Commit    string `json:"commit"`     // VCS revision, "+dirty" when built from modified files; "unknown" without VCS data
	GoVersion string `json:"go_version"` // the toolchain that built the binary
}

// Get returns this binary's Info: the linker's values where the Makefile
// set them, else what `go build` recorded (debug.ReadBuildInfo).
func Get() Info {
	return get(version, commit, readBuildInfo())
}

func readBuildInfo() *debug.BuildInfo {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return nil
	}
	return bi
}

func get(v, c string, bi *debug.BuildInfo) Info {
	in := Info{Version: v, Commit: c, GoVersion: runtime.Version()}
	if bi != nil {
		in.GoVersion = bi.GoVersion
		if in.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			in.Version = bi.Main.Version
		}
		if in.Commit == "" {
			var rev, modified string
			for _, s := range bi.Settings {
				switch s.Key {
				case "vcs.revision":
					rev = s.Value
				case "vcs.modified":
					modified = s.Value
				}
			}
			if rev != "" {
				in.Commit = rev
				if modified == "true" {
					in.Commit += "+dirty"
				}
			}
		}
	}
	if in.Version == "" {
		in.Version = "devel"
	}
	if in.Commit == "" {
		in.Commit = "unknown"
	}
	return in
}

// String is the one line `cairn version` prints.
func (i Info) String() string {
	return fmt.Sprintf("cairn %s (commit %s, %s)", i.Version, i.Commit, i.GoVersion)
}
