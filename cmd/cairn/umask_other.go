//go:build !unix

package main

// privateUmask: no umask outside Unix; the store's directories are still
// created owner-only.
func privateUmask() {}
