package radosstore

import (
	"errors"
	"log/slog"
	"time"

	"github.com/cairn-s3/cairn/internal/objstore"
)

// Options configure Open.
type Options struct {
	// ConfFile is the ceph.conf to read (rados_conf_read_file). Required.
	ConfFile string
	// User is the client name without the "client." prefix (rados_create2
	// with "client.<User>"). Default "admin".
	User string
	// Classes holds the Go object class methods ExecStep can call.
	Classes *objstore.Registry
	// Logger receives retry and connection messages. Default slog.Default().
	Logger *slog.Logger
	// CreatePools lets CreatePool create missing pools (rados_pool_create).
	// When false, CreatePool only checks that the pool exists (ErrExists if
	// it does, an error naming the pool if it does not), for clusters whose
	// pools are created by an operator.
	CreatePools bool
	// PoolPrefix is prepended to every pool name, so several independent
	// stores (tests, tenants) can share a cluster. ListPools strips it and
	// lists only pools carrying it. Default "".
	PoolPrefix string
	// Now is the clock MethodContext.Now uses. Default time.Now.
	Now func() time.Time
	// MaxAttempts bounds the attempts of one optimistic transaction (exec,
	// emulated guards) before it fails with ErrBusy. Default 64.
	MaxAttempts int
	// ReadGuess is the buffer size for a read to the end of an object of
	// unknown size; larger objects take a second, version-guarded round
	// trip. Default 4 MiB.
	ReadGuess int
	// OpTimeout sets rados_osd_op_timeout and rados_mon_op_timeout (0 keeps
	// the configuration's value: wait forever).
	OpTimeout time.Duration
}

// EnsureDefaults fills in defaults.
func (o *Options) EnsureDefaults() {
	if o.User == "" {
		o.User = "admin"
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = 64
	}
	if o.ReadGuess <= 0 {
		o.ReadGuess = 4 << 20
	}
}

// Validate reports every problem with o.
func (o *Options) Validate() error {
	var errs []error
	if o.ConfFile == "" {
		errs = append(errs, errors.New("radosstore: ConfFile is required"))
	}
	if o.ReadGuess > objstore.MaxObjectSize {
		errs = append(errs, errors.New("radosstore: ReadGuess over the object size limit"))
	}
	if o.OpTimeout < 0 {
		errs = append(errs, errors.New("radosstore: negative OpTimeout"))
	}
	return errors.Join(errs...)
}
