// Package embedded is Cairn's default object-layer backend: pools,
// namespaces and objects (data, xattrs, omap) stored in a local pebble LSM,
// with large objects in separate blob files.
//
// It owns the on-disk layout (docs/format/embedded.md), per-object
// serialisation (a lock table), durability (every acknowledged Operate is
// synced; concurrent operations share WAL syncs) and in-process execution of
// object class methods. The design is in docs/design/embedded.md.
package embedded
