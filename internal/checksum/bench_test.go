package checksum

import (
	"crypto/md5"
	"hash"
	"hash/crc64"
	"testing"
)

// benchmarkHash4MiB hashes a 4 MiB body in 32 KiB writes, as io.Copy
// feeds a PUT body to the verifier.
func benchmarkHash4MiB(b *testing.B, newHash func() hash.Hash) {
	buf := make([]byte, 32<<10)
	for i := range buf {
		buf[i] = byte(i * 7)
	}
	b.SetBytes(4 << 20)
	b.ReportAllocs()
	for b.Loop() {
		h := newHash()
		for n := 0; n < 4<<20; n += len(buf) {
			h.Write(buf)
		}
		h.Sum(nil)
	}
}

func BenchmarkCRC64NVME4MiB(b *testing.B) { benchmarkHash4MiB(b, CRC64NVME.New) }

// BenchmarkCRC64NVMETable4MiB is hash/crc64 with the NVMe table, the
// implementation CRC64NVME.New replaced.
func BenchmarkCRC64NVMETable4MiB(b *testing.B) {
	benchmarkHash4MiB(b, func() hash.Hash { return crc64.New(nvme) })
}

// BenchmarkMD54MiB is the hash every PUT already pays for its ETag.
func BenchmarkMD54MiB(b *testing.B) { benchmarkHash4MiB(b, md5.New) }
