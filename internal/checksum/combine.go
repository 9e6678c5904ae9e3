package checksum

import (
	"encoding/binary"
	"fmt"
)

// Part is one part's raw checksum and its length in bytes.
type Part struct {
	Sum  []byte
	Size int64
}

// FullObject computes the FULL_OBJECT checksum of a multipart upload from
// its parts' CRCs: the CRC of the concatenated data, without reading it.
// Only the CRC algorithms combine this way; SHA1/SHA256 return an error.
func FullObject(a Algorithm, parts []Part) ([]byte, error) {
	var poly uint64
	var width int
	switch a {
	case CRC32:
		poly, width = 0xedb88320, 32
	case CRC32C:
		poly, width = 0x82f63b78, 32
	case CRC64NVME:
		poly, width = crc64NVMEPoly, 64
	default:
		return nil, fmt.Errorf("checksum: %s has no full-object combination", a)
	}
	var crc uint64
	for i, p := range parts {
		if len(p.Sum) != a.Size() || p.Size < 0 {
			return nil, fmt.Errorf("checksum: part %d: bad %s sum", i+1, a)
		}
		var c uint64
		if width == 32 {
			c = uint64(binary.BigEndian.Uint32(p.Sum))
		} else {
			c = binary.BigEndian.Uint64(p.Sum)
		}
		if i == 0 {
			crc = c
			continue
		}
		crc = crcCombine(crc, c, p.Size, poly, width)
	}
	out := make([]byte, a.Size())
	if width == 32 {
		binary.BigEndian.PutUint32(out, uint32(crc))
	} else {
		binary.BigEndian.PutUint64(out, crc)
	}
	return out, nil
}

// crcCombine returns CRC(A||B) from CRC(A), CRC(B) and len(B) for a
// reflected CRC whose init and final xor are all ones, by applying len(B)
// zero bytes to CRC(A) as a GF(2) matrix power (the zlib crc32_combine
// method, generalised to 64-bit widths).
func crcCombine(crc1, crc2 uint64, len2 int64, poly uint64, width int) uint64 {
	if len2 <= 0 {
		return crc1 ^ crc2
	}
	odd := make([]uint64, width)  // operator for an odd power of two zero bits
	even := make([]uint64, width) // and for an even one
	odd[0] = poly
	row := uint64(1)
	for n := 1; n < width; n++ {
		odd[n] = row
		row <<= 1
	}
	gf2Square(even, odd) // two zero bits
	gf2Square(odd, even) // four zero bits
	for {
		gf2Square(even, odd) // first pass: one zero byte
		if len2&1 != 0 {
			crc1 = gf2Times(even, crc1)
		}
		len2 >>= 1
		if len2 == 0 {
			break
		}
		gf2Square(odd, even)
		if len2&1 != 0 {
			crc1 = gf2Times(odd, crc1)
		}
		len2 >>= 1
		if len2 == 0 {
			break
		}
	}
	return crc1 ^ crc2
}

func gf2Times(mat []uint64, vec uint64) uint64 {
	var sum uint64
	for i := 0; vec != 0; i, vec = i+1, vec>>1 {
		if vec&1 != 0 {
			sum ^= mat[i]
		}
	}
	return sum
}

func gf2Square(square, mat []uint64) {
	for n := range mat {
		square[n] = gf2Times(mat, mat[n])
	}
}
