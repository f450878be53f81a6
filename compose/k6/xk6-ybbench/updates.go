package ybbench

import (
	"math"
	"math/bits"
	"strconv"
)

// sql-updates' schedule (k6-scripts/lib/keys.js updateSchedule, and ybbench
// verify's Schedule in ybbench/run/verify_updates.py): iteration i's key and
// whether it is an update are a function of i, so that verify knows what a
// run wrote without a log of it. The same arithmetic, exact in uint64 where
// the JavaScript splits products to stay below 2^53.
type updateSchedule struct {
	keys, multiplier, shift uint64
	share                   float64
}

// phi is lib/keys.js PHI: an update when frac(i x phi) < share.
const phi = 0.6180339887498949

func newUpdateSchedule(keys uint64, writePercent float64) updateSchedule {
	multiplier := max(1, uint64(math.Round(float64(keys)*0.7548776662466927))%keys)
	for gcd(multiplier, keys) != 1 {
		multiplier++
	}
	shift := uint64(math.Round(float64(keys)*0.5698402909980532)) % keys
	return updateSchedule{keys, multiplier, shift, writePercent / 100}
}

func gcd(a, b uint64) uint64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// key: round r = i / keys sends position p = i mod keys to key
// (multiplier x p + r x shift) mod keys.
func (s updateSchedule) key(i uint64) uint64 {
	p, r := i%s.keys, i/s.keys
	hi, lo := bits.Mul64(s.multiplier, p)
	_, times := bits.Div64(hi%s.keys, lo, s.keys)
	return (times + r*s.shift%s.keys) % s.keys // r x shift <= i: no overflow
}

// isUpdate: as the JavaScript's (i x PHI) % 1 < share, in float64.
func (s updateSchedule) isUpdate(i uint64) bool {
	return math.Mod(float64(i)*phi, 1) < s.share
}

// sqlUpdatesStep: what iteration i of sql-updates sends. An update sets
// updateArgs[1] to the value `val:<n>:<tag>.<i>` and updateArgs[2] to the
// key `<prefix>:<n>`, and returns ""; a read sets readArgs[1] to the key and
// returns the prefix its value must start with, `val:<n>`.
func sqlUpdatesStep(prefix string, s updateSchedule, tag string) func(i uint64) (key, value, expect string) {
	head := prefix + ":"
	return func(i uint64) (string, string, string) {
		n := strconv.FormatUint(s.key(i), 10)
		if s.isUpdate(i) {
			return head + n, "val:" + n + ":" + tag + "." + strconv.FormatUint(i, 10), ""
		}
		return head + n, "", "val:" + n
	}
}
