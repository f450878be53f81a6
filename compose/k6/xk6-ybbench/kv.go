package ybbench

import (
	"crypto/rand"
	"strconv"
	"strings"
)

// The key-value workloads' keys and values (k6-scripts/lib/keys.js
// paddedKeyMaker and randomValueMaker, the plain path), in Go: keys
// `<prefix>:<index>` zero-padded to a width, values random bytes handed out
// as consecutive views of a pool that is replaced, never refilled, when used
// up, the first 6 bytes the row's index, big-endian.

func paddedKeyMaker(prefix string, width int) func(uint64) string {
	head := prefix + ":"
	digits := width - len(head)
	return func(index uint64) string {
		s := strconv.FormatUint(index, 10)
		if len(s) >= digits {
			return head + s
		}
		return head + strings.Repeat("0", digits-len(s)) + s
	}
}

const valuePoolBytes = 65536 // lib/keys.js's default

func randomValueMaker(size int) func(uint64) []byte {
	n := max(valuePoolBytes, size)
	var pool []byte
	cursor := n // empty: the first value makes a pool
	return func(index uint64) []byte {
		if cursor+size > n {
			pool = make([]byte, n)
			if _, err := rand.Read(pool); err != nil {
				panic(err) // crypto/rand does not fail on Linux
			}
			cursor = 0
		}
		v := pool[cursor : cursor+size : cursor+size]
		cursor += size
		x := index
		for i := min(size, 6) - 1; i >= 0; i-- {
			v[i] = byte(x % 256)
			x /= 256
		}
		return v
	}
}

// sql-inserts' keys and values (k6-scripts/lib/keys.js key and valueMaker):
// key `<prefix>:<index>`, value `val:<index>` padded with x so that key and
// value fill rowBytes.
func sqlRowMaker(prefix string, rowBytes int) func(uint64) (string, string) {
	head := prefix + ":"
	pad := strings.Repeat("x", rowBytes)
	return func(index uint64) (string, string) {
		n := strconv.FormatUint(index, 10)
		value := "val:" + n
		if missing := rowBytes - len(head) - len(n) - len(value); missing > 0 {
			value += pad[:missing]
		}
		return head + n, value
	}
}
