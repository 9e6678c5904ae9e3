//go:build !linux

package embedded

// physicalMemory is unknown off Linux: the default cache is the minimum.
func physicalMemory() int64 { return 0 }

// fileLimit is unknown off Linux: pebble's own default applies.
func fileLimit() int { return 0 }
