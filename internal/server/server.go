// Package server is the one place that picks a backend and wires the
// gateway together: object store, classes, driver, S3/SNS/admin HTTP API,
// metrics and background services. cmd/cairn only parses flags into a
// config.Config and calls Run.
package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"github.com/cairn-s3/cairn/internal/iam"
	"github.com/cairn-s3/cairn/internal/kms"
	"github.com/cairn-s3/cairn/internal/kms/secret"
	"github.com/cairn-s3/cairn/internal/sts"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"path/filepath"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/cairn-s3/cairn/internal/auth/sigv2"
	"github.com/cairn-s3/cairn/internal/bucketindex"
	"github.com/cairn-s3/cairn/internal/buildinfo"
	"github.com/cairn-s3/cairn/internal/cls"
	"github.com/cairn-s3/cairn/internal/config"
	"github.com/cairn-s3/cairn/internal/driver"
	"github.com/cairn-s3/cairn/internal/notify/endpoint"
	"github.com/cairn-s3/cairn/internal/notify/service"
	"github.com/cairn-s3/cairn/internal/nullgw"
	"github.com/cairn-s3/cairn/internal/objstore"
	"github.com/cairn-s3/cairn/internal/objstore/embedded"
	"github.com/cairn-s3/cairn/internal/objstore/radosstore"
	"github.com/cairn-s3/cairn/internal/redact"
	"github.com/cairn-s3/cairn/internal/s3api"
	"github.com/cairn-s3/cairn/internal/s3err"
)

// Classes returns a registry with every object class the gateway uses.
func Classes() *objstore.Registry {
	reg := objstore.NewRegistry()
	cls.RegisterAll(reg)
	bucketindex.Register(reg)
	return reg
}

// StoreDir is where the embedded backend keeps its files inside a data
// directory (`cairn rados --data-dir` opens the same path).
func StoreDir(dataDir string) string { return filepath.Join(dataDir, "store") }

// embeddedOptions are the embedded backend's options for a store in dir.
func embeddedOptions(cfg *config.Config, dir string, log *slog.Logger) embedded.Options {
	o := embedded.Options{Dir: dir, Classes: Classes(), CacheSize: cfg.CacheSize, Logger: log,
		ValueSeparation: int(cfg.ValueSeparation), CompactionConcurrency: cfg.CompactionConcurrency, MaxOpenFiles: cfg.MaxOpenFiles,
		MemTableSize: uint64(cfg.MemTableSize), DisableMmap: !cfg.MmapReads}
	if o.ValueSeparation == 0 {
		o.ValueSeparation = -1 // off; the store's 0 means its default
	}
	return o
}

// Gateway is a running gateway: everything Run starts, so tests can run
// several in one process.
type Gateway struct {
	Config   *config.Config
	Log      *slog.Logger
	Store    objstore.Store
	Driver   *driver.Driver
	API      *s3api.Server
	Registry *prometheus.Registry
	// KMS is the key-management backend (nil: none configured).
	KMS     *kms.Cached
	secrets *secret.Sealer
	iam     *iam.Store
	sts     *sts.Service
	Handler http.Handler
	// MetricsHandler serves /metrics and /healthz on the metrics-listen
	// listener (nil unless metrics-listen is set).
	MetricsHandler http.Handler

	notifyCache *endpoint.Cache
	closers     []func()
}

// Open builds a gateway on cfg without listening.
func Open(ctx context.Context, cfg *config.Config, log *slog.Logger, getenv func(string) string) (*Gateway, error) {
	// Every component logs through the redacting handler: no credential
	// reaches the log stream even if a log call passes one.
	log = redact.Logger(log)
	g := &Gateway{Config: cfg, Log: log, Registry: prometheus.NewRegistry()}
	bi := buildinfo.Get()
	buildInfo := prometheus.NewGauge(prometheus.GaugeOpts{Name: "cairn_build_info", Help: "Always 1; the labels say which build is running.",
		ConstLabels: prometheus.Labels{"version": bi.Version, "commit": bi.Commit, "goversion": bi.GoVersion}})
	buildInfo.Set(1)
	g.Registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), buildInfo)
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return nil, err
	}
	if err := tightenDataDir(cfg.DataDir, log); err != nil {
		return nil, fmt.Errorf("data directory %s: %w", cfg.DataDir, err)
	}
	// The null backend discards data: it measures the HTTP, auth and
	// checksum path alone (benchmarks).
	var be s3api.Backend = nullgw.New()
	var svc *service.Service
	if cfg.Backend != "null" {
		st, err := openStore(cfg, log)
		if err != nil {
			return nil, err
		}
		g.Store = st
		g.closers = append(g.closers, func() { _ = st.Close() })
		// The embedded store's LSM counters, the RADOS store's round trips.
		if cs, ok := st.(interface{ Collector() prometheus.Collector }); ok {
			g.Registry.MustRegister(cs.Collector())
		}
		if err := g.openKMS(cfg); err != nil {
			g.Close()
			return nil, err
		}
		if svc, err = g.openNotifications(ctx, cfg); err != nil {
			g.Close()
			return nil, err
		}
		classes, err := g.openStorageClasses(cfg, log)
		if err != nil {
			g.Close()
			return nil, err
		}
		var km kms.KMS // a nil *kms.Cached must stay a nil interface
		if g.KMS != nil {
			km = g.KMS
		}
		d, err := driver.New(ctx, driver.Options{
			KMS: km, EncryptByDefault: cfg.EncryptByDefault,
			Store: st, DefaultShards: cfg.BucketIndexShards, NoIndexView: !cfg.BucketIndexView, GCMinWait: cfg.GCMinWait,
			InlineMax: cfg.InlineMax,
			Logger:    log.With("component", "driver"), Notifier: svc, MaxBuckets: cfg.MaxBuckets,
			Failpoint:          driver.ExitFailpoint(getenv("CAIRN_DRIVER_FAILPOINT")), // crash drills
			Secrets:            g.secrets,
			QuotaStatsTTL:      cfg.QuotaStatsTTL,
			DefaultUserQuota:   defaultQuota(cfg.UserDefaultQuotaMaxObjects, cfg.UserDefaultQuotaMaxSize),
			DefaultBucketQuota: defaultQuota(cfg.BucketDefaultQuotaMaxObjects, cfg.BucketDefaultQuotaMaxSize),
			StorageClasses:     classes,
		})
		if err != nil {
			g.Close()
			return nil, err
		}
		g.Driver = d
		g.closers = append(g.closers, func() { _ = d.Close() })
		g.sealSecretsAtStart(ctx, d, svc)
		if n, err := d.SweepGC(ctx); err != nil {
			log.Warn("gc sweep", "err", err)
		} else if n > 0 {
			log.Info("gc sweep queued replaced data left by an earlier run", "records", n)
		}
		be = d
	}
	if err := bootstrapAdmin(ctx, be, cfg, getenv, log); err != nil {
		g.Close()
		return nil, err
	}
	var sessions s3api.SessionVerifier
	if g.Driver != nil {
		var err error
		if sessions, err = g.openSTS(ctx); err != nil {
			g.Close()
			return nil, err
		}
	}
	v4, err := s3api.NewSigV4WithSessions(be, nil, sessions)
	if err != nil {
		g.Close()
		return nil, err
	}
	auth := sigAuth{v4: v4, lookup: s3api.SecretLookup(be)}
	if sessions != nil {
		auth.sessions = s3api.SessionSecretLookup(sessions)
	}
	var domains []string
	if cfg.Domain != "" {
		domains = []string{cfg.Domain}
	}
	apiCfg := s3api.Config{
		Backend: be, Auth: auth, Logger: log.With("component", "s3api"),
		Registerer: g.Registry, Region: cfg.Region, DomainNames: domains,
		MaxHeaderBytes: cfg.MaxHeaderBytes, MaxRequestShards: cfg.ShardCap(), BodyIdleTimeout: cfg.RequestBodyIdleTimeout,
		AllowSSECOverHTTP: !cfg.CryptRequireTLS, MaxBuckets: cfg.MaxBuckets,
	}
	if g.Driver != nil {
		if err := g.openLimits(cfg, &apiCfg); err != nil {
			g.Close()
			return nil, err
		}
	}
	api, err := s3api.New(apiCfg)
	if err != nil {
		g.Close()
		return nil, err
	}
	g.API = api
	if g.Driver != nil {
		api.HandleAdmin("rados", g.adminRados)
		api.HandleAdmin("kms", g.adminKMS(svc))
		if err := g.mountIAM(g.Driver, api); err != nil {
			g.Close()
			return nil, err
		}
		if err := g.mountNotifications(cfg, svc, g.Driver, api); err != nil {
			g.Close()
			return nil, err
		}
		if err := g.openReshard(ctx, cfg, g.Driver, api); err != nil {
			g.Close()
			return nil, err
		}
		if err := g.openLifecycle(ctx, cfg, g.Driver, api); err != nil {
			g.Close()
			return nil, err
		}
		if err := g.openOrphans(ctx, cfg, g.Driver, api); err != nil {
			g.Close()
			return nil, err
		}
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		_, _ = w.Write([]byte("ok\n"))
	})
	// /metrics names no tenant resource unless asked to and needs
	// credentials unless served publicly or on its own listener.
	mlog := log.With("component", "metrics")
	var metrics http.Handler
	if cfg.MetricsListen == "" {
		metrics = metricsHandler(g.Registry, cfg.MetricsTenantLabels, newMetricsAccess(cfg, api, mlog, true))
	} else {
		m := metricsHandler(g.Registry, cfg.MetricsTenantLabels, newMetricsAccess(cfg, api, mlog, false))
		g.MetricsHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch {
			case r.URL.Path == "/healthz":
				mux.ServeHTTP(w, r)
			case r.URL.Path == "/metrics" && (r.Method == http.MethodGet || r.Method == http.MethodHead):
				m.ServeHTTP(w, r)
			default:
				http.NotFound(w, r)
			}
		})
	}
	g.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/healthz":
			mux.ServeHTTP(w, r)
		case "/metrics":
			// With metrics-listen set, this is the S3 bucket "metrics".
			if metrics != nil && r.Method == http.MethodGet && r.URL.RawQuery == "" {
				metrics.ServeHTTP(w, r)
				return
			}
			api.ServeHTTP(w, r)
		default:
			api.ServeHTTP(w, r)
		}
	})
	return g, nil
}

// openStore opens the object layer cfg.Backend names.
func openStore(cfg *config.Config, log *slog.Logger) (objstore.Store, error) {
	if cfg.Backend == "rados" {
		// Pools are created on first use; gateways sharing a cluster share
		// them (same prefix), each keeping only its admin credentials file in
		// its data directory.
		st, err := radosstore.Open(radosstore.Options{
			ConfFile: cfg.CephConf, User: cfg.CephUser, PoolPrefix: cfg.CephPoolPrefix,
			Classes: Classes(), Logger: log.With("component", "radosstore"), CreatePools: true,
		})
		if err != nil {
			return nil, fmt.Errorf("open Ceph cluster %s: %w", cfg.CephConf, err)
		}
		return st, nil
	}
	st, err := embedded.Open(embeddedOptions(cfg, StoreDir(cfg.DataDir), log.With("component", "embedded")))
	if err != nil {
		return nil, fmt.Errorf("open data directory %s: %w", cfg.DataDir, err)
	}
	return st, nil
}

// openStorageClasses places the configured storage classes: a pool in the
// gateway's store, a pool named by the option (rados), or a data
// directory of its own (embedded), opened here and closed with the
// gateway.
func (g *Gateway) openStorageClasses(cfg *config.Config, log *slog.Logger) ([]driver.StorageClass, error) {
	specs, err := config.ParseStorageClasses(cfg.StorageClasses)
	if err != nil {
		return nil, err
	}
	var out []driver.StorageClass
	for _, sp := range specs {
		c := driver.StorageClass{Name: sp.Name}
		switch {
		case sp.Location == "":
		case cfg.Backend == "rados":
			c.Pool = sp.Location
		default:
			// Laid out as a data directory, so `cairn rados --data-dir`
			// inspects it.
			if err := os.MkdirAll(sp.Location, 0o700); err != nil {
				return nil, fmt.Errorf("storage class %s: %w", sp.Name, err)
			}
			st, err := embedded.Open(embeddedOptions(cfg, StoreDir(sp.Location), log.With("component", "embedded", "storage_class", sp.Name)))
			if err != nil {
				return nil, fmt.Errorf("storage class %s: open data directory %s: %w", sp.Name, sp.Location, err)
			}
			g.closers = append(g.closers, func() { _ = st.Close() })
			c.Store = st
		}
		out = append(out, c)
	}
	return out, nil
}

// Close stops background services and closes the store, in reverse order.
func (g *Gateway) Close() {
	for i := len(g.closers) - 1; i >= 0; i-- {
		g.closers[i]()
	}
	g.closers = nil
}

// Run serves until ctx is done, then shuts down gracefully: the listeners
// close, in-flight requests finish (up to ShutdownTimeout), then the
// store is closed.
func Run(ctx context.Context, cfg *config.Config, log *slog.Logger, getenv func(string) string) error {
	// Bind first: a busy or bad address (or a bad certificate) must fail
	// before a new data directory is initialised (and admin keys made for
	// it). The HTTP header limit is derived from the config as
	// s3api.Server.HTTPMaxHeaderBytes derives it.
	lns, err := listen(cfg, s3api.HTTPMaxHeaderBytesFor(cfg.MaxHeaderBytes), log)
	if err != nil {
		return err
	}
	var mln net.Listener
	if cfg.MetricsListen != "" {
		if mln, err = net.Listen("tcp", cfg.MetricsListen); err != nil {
			for _, ln := range lns {
				ln.Close()
			}
			return fmt.Errorf("metrics-listen: %w", err)
		}
	}
	var pln net.Listener
	if cfg.PprofListen != "" {
		if pln, err = net.Listen("tcp", cfg.PprofListen); err != nil {
			for _, ln := range lns {
				ln.Close()
			}
			if mln != nil {
				mln.Close()
			}
			return fmt.Errorf("pprof-listen: %w", err)
		}
	}
	g, err := Open(ctx, cfg, log, getenv)
	if err != nil {
		for _, ln := range lns {
			ln.Close()
		}
		if mln != nil {
			mln.Close()
		}
		if pln != nil {
			pln.Close()
		}
		return err
	}
	defer g.Close()
	srv := &http.Server{
		Handler:           withTLSState(restoreExpect(g.Handler)),
		MaxHeaderBytes:    g.API.HTTPMaxHeaderBytes(),
		ReadHeaderTimeout: cfg.ReadHeaderTimeout,
		IdleTimeout:       cfg.IdleTimeout,
		ConnContext:       connContext,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	errc := make(chan error, len(lns)+1)
	var addrs []string
	for _, ln := range lns {
		go func() { errc <- srv.Serve(ln) }()
		scheme := "http"
		if ln.tls != nil {
			scheme = "https"
		}
		addrs = append(addrs, scheme+"://"+ln.Addr().String())
	}
	servers := []*http.Server{srv}
	if mln != nil {
		msrv := &http.Server{
			Handler: g.MetricsHandler, ReadHeaderTimeout: cfg.ReadHeaderTimeout, IdleTimeout: cfg.IdleTimeout,
			ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		}
		servers = append(servers, msrv)
		go func() { errc <- msrv.Serve(mln) }()
		log.Info("metrics serving", "metrics_listen", "http://"+mln.Addr().String())
	}
	if pln != nil {
		psrv := &http.Server{Handler: pprofHandler(), ReadHeaderTimeout: cfg.ReadHeaderTimeout,
			ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
		servers = append(servers, psrv)
		go func() { errc <- psrv.Serve(pln) }()
		log.Info("pprof serving", "pprof_listen", "http://"+pln.Addr().String())
	}
	bi := buildinfo.Get()
	log.Info("cairn serving", "listen", addrs, "data_dir", cfg.DataDir, "backend", cfg.Backend,
		"region", cfg.Region, "version", bi.Version, "commit", bi.Commit, "go_version", bi.GoVersion)
	select {
	case err := <-errc:
		for _, s := range servers {
			_ = s.Close()
		}
		return err
	case <-ctx.Done():
	}
	log.Info("shutting down: waiting for in-flight requests", "timeout", cfg.ShutdownTimeout)
	sctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
	defer cancel()
	for _, s := range servers {
		if err := s.Shutdown(sctx); err != nil {
			log.Warn("shutdown", "err", err)
		}
	}
	for range servers[1:] {
		if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
			return err
		}
	}
	for range lns {
		if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
			return err
		}
	}
	log.Info("stopped")
	return nil
}

// listen opens the plain listener on cfg.Listen and, with a certificate,
// the TLS one on cfg.TLSListen (or TLS on cfg.Listen when TLSListen is
// empty).
func listen(cfg *config.Config, maxHeader int, log *slog.Logger) ([]*listener, error) {
	var tcfg *tls.Config
	if cfg.TLSCert != "" {
		cert, err := tls.LoadX509KeyPair(cfg.TLSCert, cfg.TLSKey)
		if err != nil {
			return nil, fmt.Errorf("tls-cert/tls-key: %w", err)
		}
		tcfg = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12, NextProtos: []string{"http/1.1"}}
	}
	type spec struct {
		addr string
		tls  *tls.Config
	}
	specs := []spec{{cfg.Listen, nil}}
	switch {
	case tcfg != nil && cfg.TLSListen != "":
		specs = append(specs, spec{cfg.TLSListen, tcfg})
	case tcfg != nil:
		specs[0].tls = tcfg
	}
	var out []*listener
	for _, sp := range specs {
		ln, err := net.Listen("tcp", sp.addr)
		if err != nil {
			for _, l := range out {
				_ = l.Close()
			}
			return nil, err
		}
		out = append(out, &listener{Listener: ln, tls: sp.tls, maxHeader: maxHeader, log: log.With("component", "s3api")})
	}
	return out, nil
}

// sigAuth adapts the SigV4 verifier (and SigV2, which boto3 still uses for
// presigned URLs) to the handlers' Authenticator.
type sigAuth struct {
	v4     *s3api.SigV4
	lookup sigv2.SecretLookup
	// sessions finds the secrets of temporary credentials (nil: none).
	sessions func(ctx context.Context, ak, token string) (string, error)
}

func (a sigAuth) Authenticate(r *http.Request) (s3api.AuthResult, error) {
	if sigv2.IsV2(r) {
		lookup := a.lookup
		// boto3 presigns S3 URLs with SigV2 by default, a session's too:
		// the token names the secret (it opens only for its access key).
		tok := r.Header.Get("X-Amz-Security-Token")
		if q := r.URL.Query().Get("x-amz-security-token"); q != "" {
			if tok != "" && tok != q {
				return s3api.AuthResult{}, s3err.New(s3err.ErrInvalidToken, "The request carries two different session tokens.")
			}
			tok = q
		}
		if tok != "" {
			if a.sessions == nil {
				return s3api.AuthResult{}, s3err.New(s3err.ErrInvalidToken, "Session tokens are not supported by this endpoint.")
			}
			lookup = func(ctx context.Context, ak string) (string, error) { return a.sessions(ctx, ak, tok) }
		}
		// A virtual-host request signs "/bucket/key": without the bucket a
		// URL signed for one bucket would verify against any other.
		ak, err := sigv2.Verify(r, lookup, time.Now(), s3api.VirtualHostBucket(r.Context()))
		if err != nil {
			return s3api.AuthResult{}, err
		}
		// V2 signs neither the body nor most of the query: the s3api
		// Server limits what a V2 request may do.
		return s3api.AuthResult{AccessKey: ak, SigV2: true, UnsignedPayload: true}, nil
	}
	return a.v4.Authenticate(r)
}

// bootstrapAdmin creates the admin user on a fresh data directory, with
// CAIRN_ACCESS_KEY/CAIRN_SECRET_KEY if set, else generated keys. Generated
// keys go to <data-dir>/admin.credentials (0600) and nowhere else: the
// console and the log only name the file. Keys from the environment are
// not written anywhere: their owner has them already.
func bootstrapAdmin(ctx context.Context, d s3api.Backend, cfg *config.Config, getenv func(string) string, log *slog.Logger) error {
	if u, err := d.GetUser(ctx, "admin"); err == nil {
		warnIgnoredKeys(u, getenv, cfg, log)
		return nil
	} else if !errors.Is(err, driver.ErrNoSuchUser) {
		return err
	}
	ak, sk := getenv("CAIRN_ACCESS_KEY"), getenv("CAIRN_SECRET_KEY")
	generated := false
	if ak == "" || sk == "" {
		ak, sk = driver.NewKeyPair()
		generated = true
	}
	u, err := d.CreateUser(ctx, driver.User{ID: "admin", DisplayName: "Cairn admin", Admin: true,
		Keys: []driver.Key{{AccessKey: ak, SecretKey: sk}}})
	if err != nil {
		return fmt.Errorf("create admin user: %w", err)
	}
	if !generated {
		log.Info("created admin user", "access_key", u.Keys[0].AccessKey, "generated_keys", false)
		return nil
	}
	path := filepath.Join(cfg.DataDir, "admin.credentials")
	body := fmt.Sprintf("CAIRN_ACCESS_KEY=%s\nCAIRN_SECRET_KEY=%s\n", u.Keys[0].AccessKey, u.Keys[0].SecretKey)
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "cairn: created admin user with generated keys; they are in %s (mode 0600)\n", path)
	log.Info("created admin user", "credentials_file", path, "generated_keys", true)
	return nil
}

// warnIgnoredKeys: CAIRN_ACCESS_KEY/CAIRN_SECRET_KEY only seed a new data
// directory. Set for an initialised one with other keys, they do nothing;
// say so instead of letting the operator wonder why they are refused.
func warnIgnoredKeys(admin driver.User, getenv func(string) string, cfg *config.Config, log *slog.Logger) {
	ak, sk := getenv("CAIRN_ACCESS_KEY"), getenv("CAIRN_SECRET_KEY")
	if ak == "" && sk == "" {
		return
	}
	for _, k := range admin.Keys {
		if k.AccessKey == ak && k.SecretKey == sk {
			return
		}
	}
	log.Warn("CAIRN_ACCESS_KEY/CAIRN_SECRET_KEY are ignored: the data directory already has an admin user with other keys "+
		"(they only seed a new data directory; see admin.credentials, or add keys with cairn admin user create)",
		"data_dir", cfg.DataDir, "access_key", ak)
}

// pprofHandler serves the runtime profiles (pprof-listen, loopback only).
func pprofHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	return mux
}
