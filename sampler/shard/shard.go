// Package shard assigns each lane of a configuration to one of N samplers
// by rendezvous hashing, the lanes of a quota group as one key
// (docs/deploy.md, "Sites and shards").
package shard

import (
	"encoding/binary"
	"hash/fnv"
)

// Of returns the shard index, in [0, n), that owns key among n shards (n < 1
// is 1).
func Of(key string, n int) int {
	best, owner := uint64(0), 0
	for i := range max(n, 1) {
		if w := weight(key, i); i == 0 || w > best {
			best, owner = w, i
		}
	}
	return owner
}

// weight is the key's score for shard i: FNV-1a of the key and the shard
// index, mixed by the SplitMix64 finaliser so that nearby inputs spread.
func weight(key string, i int) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(key))
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(i))
	_, _ = h.Write(b[:])
	x := h.Sum64()
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// Key is what a lane hashes as: its quota group's name, else its own.
func Key(lane, quota string) string {
	if quota != "" {
		return "quota:" + quota
	}
	return "lane:" + lane
}

// Lane is a lane and the quota group it belongs to ("" for none).
type Lane struct {
	Name, Quota string
}

// Owned returns the names of the lanes shard index of n owns, in input order.
func Owned(lanes []Lane, index, n int) []string {
	var out []string
	for _, l := range lanes {
		if Of(Key(l.Name, l.Quota), n) == index {
			out = append(out, l.Name)
		}
	}
	return out
}
