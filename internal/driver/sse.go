package driver

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/md5"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"sync"

	"github.com/cairn-s3/cairn/internal/bucketindex"
	"github.com/cairn-s3/cairn/internal/crypt"
	"github.com/cairn-s3/cairn/internal/objstore"
)

// Server-side encryption (docs/format/sse.md). The driver encrypts below
// every S3 operation: a write resolves what it asks for (request, else the
// bucket default, else the gateway default) into an SSERecord and an object
// key (OEK); each run is encrypted under a key derived from the OEK and
// the run's prefix; reads open the OEK and decrypt only the packages a
// range covers.

// Stored encryption modes.
const (
	SSEModeS3  = "SSE-S3"
	SSEModeKMS = "SSE-KMS"
	SSEModeC   = "SSE-C"
)

// EncStripeSize is the stripe size of encrypted runs: 64 whole packages,
// 4 MiB of plaintext, so no package spans two stripes.
const EncStripeSize = 64 * crypt.MaxPackage

// SSE errors.
var (
	// ErrSSECustomerKeyMissing: an SSE-C object read (or part written)
	// without the customer key.
	ErrSSECustomerKeyMissing = errors.New("the object is encrypted with a customer key; the key must be provided")
	// ErrSSECustomerKeyMismatch: the customer key does not open the object.
	ErrSSECustomerKeyMismatch = errors.New("the provided customer key does not match the object's")
	// ErrSSENotApplicable: a customer key sent for an object without SSE-C.
	ErrSSENotApplicable = errors.New("the encryption parameters are not applicable to this object")
	// ErrKMSNotConfigured: SSE-S3/SSE-KMS asked of a gateway without a KMS
	// (or without a default key, for SSE-S3).
	ErrKMSNotConfigured = errors.New("server-side encryption is not configured on this gateway")
	// ErrNoSuchEncryptionConfiguration: GetBucketEncryption of a bucket
	// without one.
	ErrNoSuchEncryptionConfiguration = errors.New("the server side encryption configuration was not found")
)

// SSERecord is an encrypted object's (or upload's) encryption, stored in
// its ObjectMeta. It holds no key in clear.
type SSERecord struct {
	V         int    `json:"v"`
	Mode      string `json:"m"`
	KeyID     string `json:"k,omitempty"` // KMS key that sealed the OEK
	Context   string `json:"c,omitempty"` // SSE-KMS encryption context as sent (base64 JSON)
	BucketKey bool   `json:"b,omitempty"`
	// Sealed is the OEK sealed by the KMS, or with BucketKeySealed set,
	// sealed locally under that bucket key (bucketkey.go).
	Sealed          []byte `json:"s"`
	BucketKeySealed []byte `json:"bk,omitempty"`
}

// SSESpec is the encryption a write asks for.
type SSESpec struct {
	Mode      string // SSEModeS3, SSEModeKMS or SSEModeC
	KMSKeyID  string // SSE-KMS; "" = the KMS default key
	Context   string // SSE-KMS x-amz-server-side-encryption-context
	BucketKey bool
	// CustomerKey is the SSE-C key (32 bytes); never stored.
	CustomerKey []byte `json:"-"`
}

// BucketEncryption is a bucket's default encryption rule
// (PutBucketEncryption): Mode SSEModeS3 or SSEModeKMS.
type BucketEncryption struct {
	Mode      string `json:"mode"`
	KMSKeyID  string `json:"kms_key_id,omitempty"`
	BucketKey bool   `json:"bucket_key,omitempty"`
}

// SSERequest is the per-request encryption input. It travels in the
// request context (WithSSE) because, like credentials, it belongs to the
// request and reaches reads and writes several calls deep (copy, part
// copy, POST) that would otherwise each grow parameters.
type SSERequest struct {
	// Put is the encryption of the object or upload written; nil = the
	// bucket default (or the gateway's).
	Put *SSESpec
	// CustomerKey opens an SSE-C object read, or the SSE-C upload a part
	// is written to.
	CustomerKey []byte
	// CopySourceKey opens an SSE-C copy source.
	CopySourceKey []byte
}

type sseCtxKey struct{}

// WithSSE returns ctx carrying the request's encryption input.
func WithSSE(ctx context.Context, r SSERequest) context.Context {
	return context.WithValue(ctx, sseCtxKey{}, r)
}

func sseFrom(ctx context.Context) SSERequest {
	r, _ := ctx.Value(sseCtxKey{}).(SSERequest)
	return r
}

// sseAAD binds a sealed OEK to its record and object key.
func sseAAD(mode, key, kmsContext string) []byte {
	var b bytes.Buffer
	b.WriteString("cairn-sse/1\x00")
	b.WriteString(mode)
	b.WriteByte(0)
	b.WriteString(key)
	if kmsContext != "" {
		b.WriteByte(0)
		b.WriteString(kmsContext)
	}
	return b.Bytes()
}

func customerAEAD(ckey []byte) (cipher.AEAD, error) {
	if len(ckey) != 32 {
		return nil, fmt.Errorf("%w: the customer key must be 256 bits", ErrInvalidArgument)
	}
	m := hmac.New(sha256.New, ckey)
	m.Write([]byte("cairn-sse customer"))
	b, err := aes.NewCipher(m.Sum(nil))
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(b)
}

// resolveSSE picks the encryption of a new object: the request's, else the
// bucket default, else the gateway default; nil = stored in clear.
func (d *Driver) resolveSSE(ctx context.Context, inst Instance) *SSESpec {
	if s := sseFrom(ctx).Put; s != nil {
		return s
	}
	if e := inst.Encryption; e != nil {
		return &SSESpec{Mode: e.Mode, KMSKeyID: e.KMSKeyID, BucketKey: e.BucketKey}
	}
	if d.opts.EncryptByDefault {
		return &SSESpec{Mode: SSEModeS3, BucketKey: true}
	}
	return nil
}

// newSSE makes the record and OEK of a new object (nil, nil: no
// encryption). KMS errors come back as they are (kms.ErrUnavailable, ...):
// nothing has been written yet.
func (d *Driver) newSSE(ctx context.Context, inst Instance, key string) (*SSERecord, []byte, error) {
	spec := d.resolveSSE(ctx, inst)
	if spec == nil {
		return nil, nil, nil
	}
	rec := &SSERecord{V: 1, Mode: spec.Mode, BucketKey: spec.BucketKey}
	switch spec.Mode {
	case SSEModeC:
		g, err := customerAEAD(spec.CustomerKey)
		if err != nil {
			return nil, nil, err
		}
		oek := make([]byte, crypt.KeySize)
		nonce := make([]byte, g.NonceSize())
		if _, err := rand.Read(oek); err != nil {
			return nil, nil, err
		}
		if _, err := rand.Read(nonce); err != nil {
			return nil, nil, err
		}
		rec.BucketKey = false
		rec.Sealed = g.Seal(nonce, nonce, oek, sseAAD(rec.Mode, key, ""))
		return rec, oek, nil
	case SSEModeS3, SSEModeKMS:
		if d.opts.KMS == nil {
			return nil, nil, ErrKMSNotConfigured
		}
		keyID := spec.KMSKeyID
		if spec.Mode == SSEModeS3 {
			keyID = ""
		}
		if keyID == "" && d.opts.KMS.DefaultKeyID() == "" {
			return nil, nil, ErrKMSNotConfigured
		}
		rec.Context = spec.Context
		if spec.BucketKey {
			bk, err := d.genBucketKey(ctx, inst, rec.Mode, keyID, rec.Context)
			if err != nil {
				return nil, nil, err
			}
			oek := make([]byte, crypt.KeySize)
			if _, err := rand.Read(oek); err != nil {
				return nil, nil, err
			}
			if rec.Sealed, err = localSeal(bk.plain, oek, sseAAD(rec.Mode, key, rec.Context)); err != nil {
				return nil, nil, err
			}
			rec.KeyID, rec.BucketKeySealed = bk.keyID, bk.sealed
			return rec, oek, nil
		}
		dk, err := d.opts.KMS.GenerateDataKey(ctx, keyID, sseAAD(rec.Mode, key, rec.Context))
		if err != nil {
			return nil, nil, err
		}
		rec.KeyID, rec.Sealed = dk.KeyID, dk.Sealed
		return rec, dk.Plaintext, nil
	}
	return nil, nil, fmt.Errorf("%w: unknown encryption mode %q", ErrInvalidArgument, spec.Mode)
}

// openSSE returns the OEK of a stored record (nil, nil for a plaintext
// object), with ckey the customer key the request carries.
func (d *Driver) openSSE(ctx context.Context, rec *SSERecord, key string, ckey []byte) ([]byte, error) {
	if rec == nil {
		if ckey != nil {
			return nil, ErrSSENotApplicable
		}
		return nil, nil
	}
	switch rec.Mode {
	case SSEModeC:
		return openCustomer(rec, key, ckey)
	case SSEModeS3, SSEModeKMS:
		if ckey != nil {
			return nil, ErrSSENotApplicable
		}
		if d.opts.KMS == nil {
			return nil, ErrKMSNotConfigured
		}
		if rec.BucketKeySealed != nil {
			bk, err := d.openBucketKey(ctx, rec)
			if err != nil {
				return nil, err
			}
			return localOpen(bk, rec.Sealed, sseAAD(rec.Mode, key, rec.Context))
		}
		return d.opts.KMS.Decrypt(ctx, rec.KeyID, rec.Sealed, sseAAD(rec.Mode, key, rec.Context))
	}
	return nil, fmt.Errorf("unknown stored encryption mode %q", rec.Mode)
}

func openCustomer(rec *SSERecord, key string, ckey []byte) ([]byte, error) {
	if ckey == nil {
		return nil, ErrSSECustomerKeyMissing
	}
	g, err := customerAEAD(ckey)
	if err != nil {
		return nil, err
	}
	if len(rec.Sealed) < g.NonceSize() {
		return nil, ErrSSECustomerKeyMismatch
	}
	oek, err := g.Open(nil, rec.Sealed[:g.NonceSize()], rec.Sealed[g.NonceSize():], sseAAD(rec.Mode, key, ""))
	if err != nil {
		return nil, ErrSSECustomerKeyMismatch
	}
	return oek, nil
}

// CheckCustomerKey verifies the SSE-C key of a read that does not touch
// data (HEAD): ErrSSECustomerKeyMissing, ErrSSECustomerKeyMismatch or
// ErrSSENotApplicable, or nil. Needs no KMS.
func CheckCustomerKey(info ObjectInfo, ckey []byte) error {
	rec := info.Meta.SSE
	if rec == nil || rec.Mode != SSEModeC {
		if ckey != nil {
			return ErrSSENotApplicable
		}
		return nil
	}
	oek, err := openCustomer(rec, info.Key, ckey)
	clear(oek)
	return err
}

// sseETag is the ETag of encrypted data with plaintext MD5 sum: the MD5
// for SSE-S3 (as AWS), else a keyed digest that reveals nothing of the
// plaintext.
func sseETag(rec *SSERecord, oek, sum []byte) string {
	if rec == nil || rec.Mode == SSEModeS3 {
		return hex.EncodeToString(sum)
	}
	m := hmac.New(sha256.New, oek)
	m.Write([]byte("cairn-sse etag"))
	m.Write(sum)
	return hex.EncodeToString(m.Sum(nil)[:md5.Size])
}

func runKey(oek []byte, prefix string) []byte { return crypt.DeriveKey(oek, "cairn-sse run", prefix) }

// pkgPool holds package-sized buffers (MaxPackage) of encryption and
// decryption, so small encrypted PUTs and GETs allocate none.
var pkgPool = sync.Pool{New: func() any { b := make([]byte, crypt.MaxPackage); return &b }}

func getPkg() *[]byte  { return pkgPool.Get().(*[]byte) }
func putPkg(b *[]byte) { pkgPool.Put(b) }

// encReader encrypts src into the stored stream, hashing the plaintext.
// It seals straight into the caller's buffer when a package fits (the
// stripe buffer of writeRun), and reads one package ahead to know which
// package is final.
type encReader struct {
	src        io.Reader
	s          *crypt.Sealer
	h          hash.Hash
	plain      int64
	cur, spare []byte // plaintext of the next package to seal; the lookahead buffer
	out        []byte // sealed bytes not yet returned
	outBuf     []byte
	started    bool
	srcEOF     bool
	done       bool
	pooled     [3]*[]byte
}

func newEncReader(src io.Reader, key []byte) (*encReader, error) {
	s, err := crypt.NewSealer(key)
	if err != nil {
		return nil, err
	}
	e := &encReader{src: src, s: s, h: md5.New()}
	for i := range e.pooled {
		e.pooled[i] = getPkg()
	}
	e.cur, e.spare, e.outBuf = (*e.pooled[0])[:crypt.PackageSize], (*e.pooled[1])[:crypt.PackageSize], (*e.pooled[2])[:0]
	return e, nil
}

// release returns the buffers; the reader is unusable after.
func (e *encReader) release() {
	for i, b := range e.pooled {
		if b != nil {
			putPkg(b)
			e.pooled[i] = nil
		}
	}
	e.cur, e.spare, e.out, e.outBuf = nil, nil, nil, nil
}

// fill reads up to a package of plaintext into buf.
func (e *encReader) fill(buf []byte) ([]byte, error) {
	n, err := io.ReadFull(e.src, buf[:crypt.PackageSize])
	if err != nil {
		if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, err
		}
		e.srcEOF = true
	}
	e.h.Write(buf[:n])
	e.plain += int64(n)
	return buf[:n], nil
}

func (e *encReader) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		if len(e.out) > 0 {
			c := copy(p[n:], e.out)
			e.out = e.out[c:]
			n += c
			continue
		}
		if e.done {
			break
		}
		if !e.started {
			e.started = true
			cur, err := e.fill(e.cur)
			if err != nil {
				return n, err
			}
			if len(cur) == 0 {
				e.done = true // an empty stream has no packages
				break
			}
			e.cur = cur
		}
		var next []byte
		if !e.srcEOF {
			var err error
			if next, err = e.fill(e.spare); err != nil {
				return n, err
			}
		}
		final := len(next) == 0
		var err error
		if len(p)-n >= len(e.cur)+crypt.Overhead {
			var out []byte
			out, err = e.s.Seal(p[n:n], e.cur, final)
			n += len(out)
		} else {
			e.out, err = e.s.Seal(e.outBuf[:0], e.cur, final)
		}
		if err != nil {
			return n, err
		}
		if final {
			e.done = true
			continue
		}
		e.cur, e.spare = next, e.cur[:cap(e.cur)]
	}
	if n == 0 && e.done && len(e.out) == 0 {
		return 0, io.EOF
	}
	return n, nil
}

// writeData writes body as one run, encrypted under oek when it is set.
// It returns the run and the MD5 of the plaintext.
// With hold, a small body may come back unwritten, and a clear body of at
// most inlineMax bytes comes back inline (see writeRun).
func (d *Driver) writeData(ctx context.Context, pl placement, prefix, owner string, body io.Reader, limit int64, oek []byte, hold bool, inlineMax int64) (bucketindex.Run, []byte, *heldStripe, error) {
	if oek == nil {
		return d.writeRun(ctx, pl, prefix, owner, body, limit, StripeSize, true, hold, inlineMax)
	}
	key := runKey(oek, prefix)
	defer clear(key)
	er, err := newEncReader(body, key)
	if err != nil {
		return bucketindex.Run{}, nil, nil, err
	}
	defer er.release()
	// Encrypted runs stay stored: their reads open packages from stripes.
	run, _, held, err := d.writeRun(ctx, pl, prefix, owner, er, crypt.CipherSize(limit), EncStripeSize, false, hold, 0)
	if err != nil {
		return run, nil, nil, err
	}
	run.Enc, run.Plain = true, er.plain
	return run, er.h.Sum(nil), held, nil
}

// newDataReader streams plaintext [off, off+n) of m: directly for clear
// runs, through package decryption for encrypted ones (oek set).
func (d *Driver) newDataReader(ctx context.Context, m bucketindex.Manifest, oek []byte, off, n int64) io.ReadCloser {
	if oek == nil {
		return newManifestReader(ctx, d, m, off, n)
	}
	return &decReader{d: d, ctx: ctx, runs: m.Runs, oek: oek, off: off, end: off + n}
}

// decReader decrypts an encrypted object's range run by run, opening each
// run's packages only when the range reaches it. No sendfile of stored
// bytes: they must pass through memory to be opened.
type decReader struct {
	d        *Driver
	ctx      context.Context
	runs     []bucketindex.Run
	oek      []byte
	off, end int64 // in the object's plaintext
	runStart int64 // plaintext offset of runs[0]
	cur      *crypt.Reader
	pkg      *[]byte // pooled package buffer of cur
}

// open makes r.cur the reader of the run holding r.off; false at the end.
func (r *decReader) open() (bool, error) {
	for {
		if r.off >= r.end {
			return false, nil
		}
		if len(r.runs) == 0 {
			return false, io.ErrUnexpectedEOF
		}
		run := r.runs[0]
		size := run.DataSize()
		if r.off >= r.runStart+size {
			r.runStart += size
			r.runs = r.runs[1:]
			continue
		}
		if !run.Enc {
			return false, errors.New("sse: clear run in an encrypted object")
		}
		lo := r.off - r.runStart
		ln := min(size-lo, r.end-r.off)
		_, _, cOff, cLen := crypt.PackageRange(size, lo, ln)
		src := newManifestReader(r.ctx, r.d, bucketindex.Manifest{Runs: []bucketindex.Run{run}}, cOff, cLen)
		key := runKey(r.oek, run.KeyPrefix())
		if r.pkg == nil {
			r.pkg = getPkg()
		}
		cr, err := crypt.NewReader(struct{ io.Reader }{src}, key, size, lo, ln, *r.pkg)
		clear(key)
		if err != nil {
			return false, err
		}
		r.cur = cr
		return true, nil
	}
}

func (r *decReader) Read(p []byte) (int, error) {
	for {
		if r.cur != nil {
			n, err := r.cur.Read(p)
			r.off += int64(n)
			if errors.Is(err, io.EOF) {
				r.cur = nil
				if n > 0 {
					return n, nil
				}
				continue
			}
			return n, err
		}
		ok, err := r.open()
		if err != nil {
			return 0, err
		}
		if !ok {
			return 0, io.EOF
		}
	}
}

// decChunk is the packages decReader.WriteTo reads, opens and writes at a
// time: 1 MiB of plaintext, one read from the store and one write to w.
const decChunk = 16

// chunkPool holds the ciphertext and plaintext buffers of a decChunk.
var chunkPool = sync.Pool{New: func() any {
	return &decBufs{c: make([]byte, decChunk*crypt.MaxPackage), p: make([]byte, decChunk*crypt.PackageSize)}
}}

type decBufs struct{ c, p []byte }

// WriteTo decrypts the rest of the range into w a chunk at a time: the
// stored packages of a chunk come in with one read into a pooled buffer
// (a pread of the stripe's file when the store keeps it in one: no
// per-read allocation, index lookup or copy), are opened into a pooled
// plaintext buffer and leave with one write.
func (r *decReader) WriteTo(w io.Writer) (int64, error) {
	var total int64
	// A Read before WriteTo may have left a run half consumed.
	if r.cur != nil {
		n, err := r.cur.WriteTo(w)
		total += n
		r.off += n
		r.cur = nil
		if err != nil {
			return total, err
		}
	}
	bufs := chunkPool.Get().(*decBufs)
	defer chunkPool.Put(bufs)
	var (
		op     *crypt.Opener
		opRun  string
		f      *os.File
		fOID   string
		fTried bool
	)
	defer func() {
		if f != nil {
			f.Close()
		}
	}()
	for r.off < r.end {
		if len(r.runs) == 0 {
			return total, io.ErrUnexpectedEOF
		}
		run := r.runs[0]
		size := run.DataSize()
		if r.off >= r.runStart+size {
			r.runStart += size
			r.runs = r.runs[1:]
			continue
		}
		if !run.Enc {
			return total, errors.New("sse: clear run in an encrypted object")
		}
		pio, err := r.d.dataIO(r.ctx, run.Pool)
		if err != nil {
			return total, err
		}
		opener, _ := pio.(dataOpener)
		if op == nil || opRun != run.Prefix {
			key := runKey(r.oek, run.KeyPrefix())
			var err error
			op, err = crypt.NewOpener(key)
			clear(key)
			if err != nil {
				return total, err
			}
			opRun = run.Prefix
		}
		lo := r.off - r.runStart
		ln := min(size-lo, r.end-r.off)
		// Stripes hold whole packages (EncStripeSize is a multiple of
		// MaxPackage): a chunk stops at its stripe's end.
		pps := run.StripeSize / crypt.MaxPackage
		seq := lo / crypt.PackageSize
		skip := lo - seq*crypt.PackageSize
		stripe := seq / pps
		last := min((lo+ln-1)/crypt.PackageSize, (stripe+1)*pps-1, seq+decChunk-1)
		cOff := seq * crypt.MaxPackage
		cLen := min((last+1)*crypt.MaxPackage, crypt.CipherSize(size)) - cOff
		within := cOff - stripe*run.StripeSize
		stripeLen := min(run.StripeSize, run.Size-stripe*run.StripeSize)
		oid := run.StripeOID(stripe)
		cbuf := bufs.c[:cLen]
		if fOID != oid {
			if f != nil {
				f.Close()
				f = nil
			}
			fOID, fTried = oid, false
		}
		if !fTried && opener != nil && stripeLen >= fileMin {
			fTried = true
			var err error
			if f, _, err = opener.OpenData(r.ctx, oid, 0, stripeLen); err != nil {
				return total, err
			}
		}
		if f != nil {
			if _, err := f.ReadAt(cbuf, within); err != nil {
				if errors.Is(err, io.EOF) {
					err = io.ErrUnexpectedEOF
				}
				return total, err
			}
		} else {
			rop := objstore.NewReadOp()
			rd := rop.Read(within, cLen)
			if err := pio.OperateRead(r.ctx, oid, rop); err != nil {
				return total, err
			}
			if int64(len(rd.Data)) != cLen {
				return total, io.ErrUnexpectedEOF
			}
			cbuf = rd.Data
		}
		plain := bufs.p[:0]
		for s := seq; len(cbuf) > 0; s++ {
			n := min(int64(len(cbuf)), crypt.MaxPackage)
			var err error
			if plain, err = op.Open(plain, cbuf[:n], s, size); err != nil {
				return total, err
			}
			cbuf = cbuf[n:]
		}
		out := plain[skip:min(int64(len(plain)), skip+ln)]
		n, err := w.Write(out)
		total += int64(n)
		r.off += int64(n)
		if err == nil && n != len(out) {
			err = io.ErrShortWrite
		}
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

func (r *decReader) Close() error {
	clear(r.oek)
	if r.pkg != nil {
		r.cur = nil
		putPkg(r.pkg)
		r.pkg = nil
	}
	return nil
}

// PutBucketEncryption sets the bucket's default encryption.
func (d *Driver) PutBucketEncryption(ctx context.Context, bucket string, e BucketEncryption) error {
	if e.Mode != SSEModeS3 && e.Mode != SSEModeKMS {
		return fmt.Errorf("%w: the default encryption must be AES256 or aws:kms", ErrInvalidArgument)
	}
	if d.opts.KMS == nil {
		return ErrKMSNotConfigured
	}
	return d.UpdateInstance(ctx, bucket, func(inst *Instance) error {
		inst.Encryption = &e
		return nil
	})
}

// GetBucketEncryption returns the bucket's default encryption, or
// ErrNoSuchEncryptionConfiguration.
func (d *Driver) GetBucketEncryption(ctx context.Context, bucket string) (BucketEncryption, error) {
	inst, err := d.Instance(ctx, bucket)
	if err != nil {
		return BucketEncryption{}, err
	}
	if inst.Encryption == nil {
		return BucketEncryption{}, ErrNoSuchEncryptionConfiguration
	}
	return *inst.Encryption, nil
}

// DeleteBucketEncryption removes the bucket's default encryption.
func (d *Driver) DeleteBucketEncryption(ctx context.Context, bucket string) error {
	return d.UpdateInstance(ctx, bucket, func(inst *Instance) error {
		inst.Encryption = nil
		return nil
	})
}

// KMSConfigured reports whether SSE-S3/SSE-KMS can be served.
func (d *Driver) KMSConfigured() bool { return d.opts.KMS != nil }

// RewrapKeys re-seals the data key of every SSE-S3 and SSE-KMS object
// version in bucket under the newest version of its KMS key (after a
// rotation), without reading or rewriting data. It returns how many
// records it re-sealed. In-progress uploads keep their sealed keys (they
// still open: old key versions are never removed).
func (d *Driver) RewrapKeys(ctx context.Context, bucket string) (int, error) {
	if d.opts.KMS == nil {
		return 0, ErrKMSNotConfigured
	}
	n := 0
	in := ListVersionsInput{Bucket: bucket, MaxKeys: 1000}
	for {
		res, err := d.ListObjectVersions(ctx, in)
		if err != nil {
			return n, err
		}
		for _, v := range res.Versions {
			if v.DeleteMarker || v.Meta.SSE == nil || v.Meta.SSE.Mode == SSEModeC {
				continue
			}
			_, err := d.updateVersionMeta(ctx, bucket, v.Key, v.VersionID, "", func(_ Instance, m *ObjectMeta) error {
				if m.SSE == nil || m.SSE.Mode == SSEModeC {
					return nil
				}
				rec := *m.SSE
				var err error
				if rec.BucketKeySealed != nil {
					// The OEK stays sealed under the bucket key; the bucket
					// key itself is re-sealed.
					rec.BucketKeySealed, err = d.opts.KMS.Rewrap(ctx, rec.KeyID, rec.BucketKeySealed, bucketKeyAAD(rec.Mode, rec.Context))
				} else {
					rec.Sealed, err = d.opts.KMS.Rewrap(ctx, rec.KeyID, rec.Sealed, sseAAD(rec.Mode, v.Key, rec.Context))
				}
				if err != nil {
					return err
				}
				m.SSE = &rec
				return nil
			})
			if errors.Is(err, ErrNoSuchKey) || errors.Is(err, ErrNoSuchVersion) {
				continue // deleted meanwhile
			}
			if err != nil {
				return n, fmt.Errorf("rewrap %s: %w", v.Key, err)
			}
			n++
		}
		if !res.IsTruncated {
			return n, nil
		}
		in.KeyMarker, in.VersionIDMarker = res.NextKeyMarker, res.NextVersionIDMarker
	}
}
