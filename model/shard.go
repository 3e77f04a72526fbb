package model

import (
	"encoding/binary"

	"github.com/amnesia-dev/amnesia/subject"
)

// Shard returns the shard, among n, that holds every training row of the
// subject s: a keyed hash of the subject's key under the installation
// pepper (never of the raw id), reduced modulo n. The same subject always
// lands in the same shard of an n-shard dataset, so an erasure retrains
// exactly one shard.
func Shard(k *subject.Keyer, s subject.Key, n int) int {
	if n <= 1 {
		return 0
	}
	d := k.Digest("amnesia.shard/v1", s.String())
	return int(binary.BigEndian.Uint64(d[:8]) % uint64(n))
}
