package sigv4_test

import (
	"context"
	"io"
	"net/http"

	"github.com/cairn-s3/cairn/internal/auth/sigv4"
	"github.com/cairn-s3/cairn/internal/s3err"
)

// A PutObject handler: authenticate, stream the verified body to storage,
// commit only after a clean EOF.
func Example() {
	v := sigv4.NewVerifier(func(ctx context.Context, ak string) (string, error) {
		if ak == "AKIDEXAMPLE" {
			return "secret", nil
		}
		return "", sigv4.ErrUnknownAccessKey
	}, nil)

	put := func(w http.ResponseWriter, r *http.Request, requestID string, store io.Writer) {
		res, err := v.Verify(r)
		if err != nil {
			s3err.Write(w, r, s3err.From(err), requestID)
			return
		}
		// res.AccessKey -> user; res.Scope.Service is "s3" or "sns".
		if _, err := io.Copy(store, res.Body); err != nil {
			// Signature, payload hash, Content-MD5, checksum or length
			// failure: discard what was written.
			s3err.Write(w, r, s3err.From(err), requestID)
			return
		}
		for alg, sum := range res.Body.Checksums() {
			w.Header().Set(alg.HeaderName(), sum) // store it too
		}
		// Content-Encoding minus aws-chunked is what S3 stores.
		_ = sigv4.StripAWSChunked(r.Header.Get("Content-Encoding"))
		w.WriteHeader(http.StatusOK)
	}
	_ = put
}
