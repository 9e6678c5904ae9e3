package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"syscall"

	"github.com/cairn-s3/cairn/internal/config"
	"github.com/cairn-s3/cairn/internal/redact"
	"github.com/cairn-s3/cairn/internal/server"
)

func runServe(args []string) int {
	cfg, err := config.Load(args, os.Getenv)
	if err != nil {
		var ue *config.UsageError
		if errors.Is(err, flag.ErrHelp) || errors.As(err, &ue) {
			return usageError("cairn serve", err, config.Usage)
		}
		fmt.Fprintln(os.Stderr, "cairn serve:", err)
		return 2
	}
	if err := preloadAllocator(cfg); err != nil {
		fmt.Fprintln(os.Stderr, "cairn serve:", err)
		if cfg.Malloc == "jemalloc" {
			return 1
		}
	}
	var level slog.Level
	_ = level.UnmarshalText([]byte(cfg.LogLevel))
	log := redact.Logger(slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: level, ReplaceAttr: humanDurations})))
	log.Info("C allocator", "malloc", cfg.Malloc, "in_use", allocatorInUse(), "malloc_conf", os.Getenv("MALLOC_CONF"))
	if cfg.GOMAXPROCS > 0 {
		runtime.GOMAXPROCS(cfg.GOMAXPROCS)
	}
	log.Info("Go processors", "gomaxprocs", runtime.GOMAXPROCS(0))
	if p := cfg.GCPercent(os.Getenv("GOGC")); p > 0 {
		debug.SetGCPercent(p)
		log.Info("Go collector", "gogc", p)
	}
	if l := cfg.MemoryLimit(os.Getenv("GOMEMLIMIT")); l > 0 {
		debug.SetMemoryLimit(l)
		log.Info("Go memory limit", "bytes", l)
	}
	privateUmask()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := server.Run(ctx, cfg, log, os.Getenv); err != nil {
		log.Error("cairn serve failed", "err", err)
		return 1
	}
	return 0
}
