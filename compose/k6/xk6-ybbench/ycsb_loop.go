package ybbench

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
)

// ycsbStep: the inner loop's operations of k6-scripts/ycsb.js (YCSB's run
// phase), the same choices as its JavaScript path: a read with probability
// readProportion, else an update of one field chosen uniformly; the record
// from next (the workload's request distribution); with fieldLength >= 32 an
// update's value starts with `U<tag>:<n>.<field>:`, n the operation's
// number (k6 iteration x N + j), which `ybbench verify` reads (verify_ycsb).
// bound (OPERATION_COUNT, 0: none) ends the operations at that number.
func ycsbStep(table string, fieldCount, fieldLength int, bound uint64, readProportion float64,
	next func() uint64) func(string) func(uint64) (op, bool) {
	fields := make([]string, fieldCount)
	updates := make([]string, fieldCount)
	for f := range fields {
		fields[f] = "field" + strconv.Itoa(f)
		updates[f] = fmt.Sprintf("UPDATE %s SET %s = $1 WHERE ycsb_key = $2", table, fields[f])
	}
	// The text of lib/ycsb.js's read, so the server sees one statement either way.
	read := fmt.Sprintf("SELECT ycsb_key, %s FROM %s WHERE ycsb_key = $1", strings.Join(fields, ", "), table)
	stamped := fieldLength >= 32
	return func(tag string) func(uint64) (op, bool) {
		var field func(string) string // made at the first update, as the script does
		return func(n uint64) (op, bool) {
			if bound > 0 && n >= bound {
				return op{}, false
			}
			key := keyName(next())
			if rand.Float64() < readProportion {
				return op{name: "select", text: read, params: []string{key}, oneRow: true}, true
			}
			if field == nil {
				field = fieldMaker(fieldLength, 16384) // lib/ycsb.js's pool
			}
			f := rand.IntN(fieldCount)
			stamp := ""
			if stamped {
				stamp = "U" + tag + ":" + strconv.FormatUint(n, 10) + "." + strconv.Itoa(f) + ":"
			}
			return op{name: "update", text: updates[f], params: []string{field(stamp), key}, unacked: true, affected: true}, true
		}
	}
}
