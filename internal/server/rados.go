package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	"github.com/cairn-s3/cairn/internal/driver"
	"github.com/cairn-s3/cairn/internal/objstore"
	"github.com/cairn-s3/cairn/internal/radoscli"
	"github.com/cairn-s3/cairn/internal/s3api"
)

// RadosRequest is the body of POST /admin/rados: a `cairn rados` command
// line run against the gateway's own store (so it works while the gateway
// holds the data directory). Local files are the client's business: it
// sends file contents as Stdin and receives Stdout.
type RadosRequest struct {
	Args  []string `json:"args"`
	Stdin []byte   `json:"stdin,omitempty"`
}

// RadosResponse carries the command's exit status and output.
type RadosResponse struct {
	Exit   int    `json:"exit"`
	Stdout []byte `json:"stdout"`
	Stderr []byte `json:"stderr"`
}

// maxRadosBody bounds a remote `rados put`.
const maxRadosBody = 256 << 20

// liveStore lends the gateway's store to one command without letting the
// command close it.
type liveStore struct{ objstore.Store }

func (liveStore) Close() error { return nil }

func (g *Gateway) adminRados(w http.ResponseWriter, r *http.Request) error {
	if r.Method != http.MethodPost {
		return fmt.Errorf("%w: POST a RadosRequest", driver.ErrInvalidArgument)
	}
	var req RadosRequest
	if err := json.NewDecoder(io.LimitReader(r.Body, maxRadosBody*2)).Decode(&req); err != nil {
		return fmt.Errorf("%w: %v", driver.ErrInvalidArgument, err)
	}
	var out, errb bytes.Buffer
	code := radoscli.Run(r.Context(), req.Args, radoscli.Env{
		Open:   func(string, bool) (objstore.Store, error) { return liveStore{g.Store}, nil },
		Stdin:  bytes.NewReader(req.Stdin),
		Stdout: &out, Stderr: &errb,
	})
	return s3api.WriteJSON(w, http.StatusOK, RadosResponse{Exit: code, Stdout: out.Bytes(), Stderr: errb.Bytes()})
}
