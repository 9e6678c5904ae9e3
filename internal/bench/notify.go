package bench

import (
	"context"
	"errors"
	"io"
)

// NotifyMain runs the notify workload from command-line arguments (the
// flags are parsed here so cmd/cairn only binds the name).
func NotifyMain(ctx context.Context, args []string, out io.Writer) error {
	return errors.New("notify: not implemented yet")
}
