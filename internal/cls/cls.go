package cls

import (
	"github.com/cairn-s3/cairn/internal/cls/guardlog"
	"github.com/cairn-s3/cairn/internal/cls/lock"
	"github.com/cairn-s3/cairn/internal/cls/queue"
	"github.com/cairn-s3/cairn/internal/cls/version"
	"github.com/cairn-s3/cairn/internal/objstore"
)

// RegisterAll registers every class in this tree on reg: lock, version,
// 2pc_queue and log. Call it once per registry, before opening a backend.
func RegisterAll(reg *objstore.Registry) {
	lock.Register(reg)
	version.Register(reg)
	queue.Register(reg)
	guardlog.Register(reg)
}
