package server

import (
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
)

// privateFiles are the data directory's files that hold secrets or
// identity, relative to it.
var privateFiles = []string{"admin.credentials", "gateway.id", "gateway.lock"}

// privateDirs are the directories that must be owner-only: everything the
// store keeps (pebble's files, blobs) lies below them, so once they are
// 0700 no other user reaches any file, whatever its own mode.
func privateDirs(dataDir string) []string {
	store := StoreDir(dataDir)
	return []string{dataDir, store, filepath.Join(store, "db"), filepath.Join(store, "blobs")}
}

// tightenDataDir removes group and other access from a data directory an
// older version (or an operator) left open: the directories above become
// 0700 and the secret files 0600, each change logged at warn. Files deeper
// in the store keep their mode but can no longer be reached. It neither
// walks the store (which may hold millions of blobs) nor touches a path
// that does not exist.
func tightenDataDir(dataDir string, log *slog.Logger) error {
	var errs []error
	fix := func(path string, want fs.FileMode, dir bool) {
		fi, err := os.Lstat(path)
		if errors.Is(err, fs.ErrNotExist) {
			return
		}
		if err != nil {
			errs = append(errs, err)
			return
		}
		if fi.IsDir() != dir || fi.Mode()&fs.ModeSymlink != 0 || fi.Mode().Perm()&0o077 == 0 {
			return
		}
		if err := os.Chmod(path, fi.Mode().Perm()&want); err != nil {
			errs = append(errs, err)
			return
		}
		log.Warn("data directory: removed group/other access", "path", path,
			"was", fi.Mode().Perm().String(), "now", (fi.Mode().Perm() & want).String())
	}
	for _, d := range privateDirs(dataDir) {
		fix(d, 0o700, true)
	}
	for _, f := range privateFiles {
		fix(filepath.Join(dataDir, f), 0o600, false)
	}
	return errors.Join(errs...)
}
