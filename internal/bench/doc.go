// Package bench holds Cairn's workload benchmarks as a library: each
// workload is a Config (with EnsureDefaults and Validate) and a Run function
// returning a Result that marshals to JSON. cmd/cairn binds flags to the
// configs; results committed under docs/bench are produced by those commands.
//
// Workloads:
//
//	append    one object: plain objstore Append vs guarded log-class append
//	objstore  omap set/get and small-object writes vs concurrency; 4 MiB
//	          WriteFull throughput vs the raw synced sequential write
//	          bandwidth of the same disk
//
// Workloads run on the embedded backend on real disk, in a fresh temporary
// store under a parent directory the caller picks (to choose the disk), and
// remove it afterwards.
package bench
