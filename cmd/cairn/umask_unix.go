//go:build unix

package main

import "syscall"

// privateUmask makes everything the process creates from now on
// owner-only (files 0600, directories 0700): the data directory holds
// users' secret keys in clear, and pebble creates its files (sstables,
// WAL, MANIFEST, LOCK, blobs through its vfs) with mode 0666 minus the
// umask, long after start. Called first by the commands that open a data
// directory, before any goroutine creates files.
func privateUmask() { syscall.Umask(0o077) }
