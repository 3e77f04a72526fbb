package redis

import (
	"encoding/binary"
	"errors"
)

// errLZF is returned for input that is not a valid LZF stream of the
// expected length.
var errLZF = errors.New("lzf: corrupt input")

// lzfDecompress decompresses in (liblzf's format, which Redis uses for RDB
// strings) into exactly n bytes. A literal run is a control byte c < 32
// followed by c+1 bytes; a back reference is a control byte whose top 3
// bits are the length-2 (7 meaning: add the next byte), whose low 5 bits
// and the following byte are the offset-1 back from the current position.
func lzfDecompress(in []byte, n int) ([]byte, error) {
	out := make([]byte, 0, n)
	ip := 0
	for ip < len(in) {
		ctrl := int(in[ip])
		ip++
		if ctrl < 32 {
			l := ctrl + 1
			if ip+l > len(in) || len(out)+l > n {
				return nil, errLZF
			}
			out = append(out, in[ip:ip+l]...)
			ip += l
			continue
		}
		l := ctrl >> 5
		if l == 7 {
			if ip >= len(in) {
				return nil, errLZF
			}
			l += int(in[ip])
			ip++
		}
		if ip >= len(in) {
			return nil, errLZF
		}
		ref := len(out) - ((ctrl & 0x1f) << 8) - 1 - int(in[ip])
		ip++
		l += 2
		if ref < 0 || len(out)+l > n {
			return nil, errLZF
		}
		for i := 0; i < l; i++ { // byte by byte: the reference may overlap the output
			out = append(out, out[ref+i])
		}
	}
	if len(out) != n {
		return nil, errLZF
	}
	return out, nil
}

// rdbLen reads an RDB length encoding at b[i:]: it returns the length, the
// bytes it took, and false for a special encoding or short input.
func rdbLen(b []byte, i int) (uint64, int, bool) {
	if i >= len(b) {
		return 0, 0, false
	}
	switch c := b[i]; c >> 6 {
	case 0:
		return uint64(c & 0x3f), 1, true
	case 1:
		if i+1 >= len(b) {
			return 0, 0, false
		}
		return uint64(c&0x3f)<<8 | uint64(b[i+1]), 2, true
	case 2:
		switch c {
		case 0x80:
			if i+5 > len(b) {
				return 0, 0, false
			}
			return uint64(binary.BigEndian.Uint32(b[i+1:])), 5, true
		case 0x81:
			if i+9 > len(b) {
				return 0, 0, false
			}
			return binary.BigEndian.Uint64(b[i+1:]), 9, true
		}
	}
	return 0, 0, false
}

// maxLZF bounds the uncompressed size of one string the scan decompresses
// (Redis's proto-max-bulk-len defaults to 512 MiB).
const maxLZF = 512 << 20

// rdbLZFStrings finds every LZF-compressed string in an RDB image (the
// marker 0xC3, the compressed and the uncompressed length, the data) and
// calls fn with each decompressed. It does not parse the RDB's structure:
// it tries every 0xC3 byte, and keeps what decompresses to exactly the
// announced length (Redis compresses only strings over 20 bytes, and only
// when that saves at least 4), so no compressed string, whatever type or
// encoding holds it (a string value, a listpack of a hash or a list node),
// is missed.
func rdbLZFStrings(b []byte, fn func([]byte)) {
	for i := 0; i < len(b); i++ {
		if b[i] != 0xC3 {
			continue
		}
		clen, n1, ok := rdbLen(b, i+1)
		if !ok || clen == 0 {
			continue
		}
		ulen, n2, ok := rdbLen(b, i+1+n1)
		if !ok || ulen <= clen || ulen > maxLZF {
			continue
		}
		start := i + 1 + n1 + n2
		if uint64(len(b)-start) < clen {
			continue
		}
		out, err := lzfDecompress(b[start:start+int(clen)], int(ulen))
		if err != nil {
			continue
		}
		fn(out)
	}
}
