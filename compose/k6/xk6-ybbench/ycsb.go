package ybbench

import (
	"math"
	"math/rand/v2"
	"strconv"
)

// YCSB's key names and request distributions, the same arithmetic as
// k6-scripts/lib/ycsb.js (the plain path, which any k6 runs): CoreWorkload's
// hashed key names, Utils.fnvhash64, ZipfianGenerator,
// ScrambledZipfianGenerator and SkewedLatestGenerator. A key name costs
// ~16 µs in k6's interpreter, under 1 µs here (docs/client-efficiency.md, "What keeps the
// workloads cheap").

const (
	fnvOffset = 0xCBF29CE484222325
	fnvPrime  = 0x100000001B3
)

// fnvhash64 is YCSB's Utils.fnvhash64: FNV-1a over the 8 bytes of n, low
// byte first, then Java's Math.abs (2^63 stays 2^63, as in lib/ycsb.js).
func fnvhash64(n uint64) uint64 {
	h := uint64(fnvOffset)
	for range 8 {
		h ^= n & 0xff
		h *= fnvPrime
		n >>= 8
	}
	if int64(h) < 0 {
		h = -h
	}
	return h
}

// keyName is YCSB's key (insertorder=hashed, zeropadding=1): "user" + hash.
func keyName(keynum uint64) string {
	var b [24]byte
	return string(strconv.AppendUint(append(b[:0], "user"...), fnvhash64(keynum), 10))
}

// zeta(n, theta) = sum of 1/i^theta for i in 1..n: summed up to 1000, then
// Euler-Maclaurin, as lib/ycsb.js does.
func zeta(n, theta float64) float64 {
	m := math.Min(n, 1000)
	s := 0.0
	for i := 1.0; i <= m; i++ {
		s += math.Pow(i, -theta)
	}
	if n <= m {
		return s
	}
	s -= math.Pow(m, -theta)
	s += (math.Pow(n, 1-theta) - math.Pow(m, 1-theta)) / (1 - theta)
	s += (math.Pow(m, -theta) + math.Pow(n, -theta)) / 2
	s += (theta / 12) * (math.Pow(m, -theta-1) - math.Pow(n, -theta-1))
	return s
}

// zipfian over [0, items), item 0 the most popular (Gray et al.).
func zipfian(items, theta, zetan float64) func() float64 {
	alpha := 1 / (1 - theta)
	eta := (1 - math.Pow(2/items, 1-theta)) / (1 - zeta(2, theta)/zetan)
	second := 1 + math.Pow(0.5, theta)
	return func() float64 {
		u := rand.Float64()
		uz := u * zetan
		if uz < 1 {
			return 0
		}
		if uz < second {
			return 1
		}
		return math.Floor(items * math.Pow(eta*u-eta+1, alpha))
	}
}

// YCSB's ScrambledZipfianGenerator: a zipfian over 10^10 items hashed into
// the key space, sized recordCount + 1 with the one number past the last
// record redrawn, as YCSB does.
const scrambledItems = 1e10 + 1
const ycsbZetan099 = 26.46902820178302 // YCSB's precomputed zeta(10^10, 0.99)

func scrambledZipfian(records uint64, theta float64) func() uint64 {
	zetan := ycsbZetan099
	if theta != 0.99 {
		zetan = zeta(scrambledItems, theta)
	}
	z := zipfian(scrambledItems, theta, zetan)
	span := records + 1
	return func() uint64 {
		for {
			if k := fnvhash64(uint64(z())) % span; k < records {
				return k
			}
		}
	}
}

// latest (SkewedLatestGenerator): the last record the most popular.
func latest(records uint64, theta float64) func() uint64 {
	last := float64(records - 1)
	z := zipfian(last, theta, zeta(last, theta))
	return func() uint64 { return uint64(last - z()) }
}

func uniform(records uint64) func() uint64 {
	return func() uint64 { return uint64(math.Floor(rand.Float64() * float64(records))) }
}

// chooser is lib/ycsb.js's chooser: the next key number to ask for.
func chooser(distribution string, records uint64, theta float64) func() uint64 {
	switch distribution {
	case "zipfian":
		return scrambledZipfian(records, theta)
	case "latest":
		return latest(records, theta)
	default:
		return uniform(records)
	}
}
