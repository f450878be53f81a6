package ybbench

import (
	"crypto/rand"
	mrand "math/rand/v2"
)

// fieldMaker is lib/ycsb.js's fieldMaker: YCSB field values, random
// printable ASCII (RandomByteIterator's characters from ' ' upwards), each a
// window at a random offset of a pool of poolChars+length random characters
// made once per VU. Same pool size and scheme as the JavaScript, so the
// values written are alike in length, alphabet and compressibility. A
// non-empty stamp (ybbench verify's `L<tag>:<keynum>.<field>:`) replaces
// the value's first characters, its length unchanged.
func fieldMaker(length, poolChars int) func(stamp string) string {
	b := make([]byte, poolChars+length)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	for i := range b {
		b[i] = 32 + b[i]%95
	}
	pool := string(b)
	return func(stamp string) string {
		off := mrand.IntN(poolChars)
		if stamp == "" {
			return pool[off : off+length] // shares the pool: no copy
		}
		if len(stamp) >= length {
			return stamp // as lib/ycsb.js: the stamp whole
		}
		return stamp + pool[off+len(stamp):off+length]
	}
}
