// Package delivery is the persistent-notification delivery manager that
// every gateway runs: it discovers topic queue shards through the queue
// registry, owns shards through leases (cls lock with expiry and renewal),
// spreads shards fairly across the live gateways, and delivers each shard's
// entries to the topic's endpoint in order per object key, removing an entry
// only after the endpoint acknowledged it (or it failed permanently or
// expired).
//
// Every list, update and remove on a shard carries lock.AssertLocked with
// the lease's cookie in the same compound op, so a gateway whose lease lapsed
// or was broken cannot remove or modify entries (fencing).
//
// The package depends on small interfaces (ShardSource, TopicSource,
// Endpoints) rather than on the registry and endpoint packages, so that the
// server wires the real implementations and tests can run several managers
// over one store. The design, the ordering argument and exactly when a
// receiver can see a duplicate are in docs/design/delivery.md.
package delivery
