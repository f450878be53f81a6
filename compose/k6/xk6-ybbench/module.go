// Package ybbench is k6/x/ybbench, ybbench's Go helpers module for its k6
// scripts: a statement path without xk6-sql (pgconn.go, DB_DRIVER=pgconn);
// and helpers, YCSB key names, key choosers, field values and key-value
// rows computed in Go instead of k6's JavaScript interpreter, and an
// end-of-test latency summary of fixed size (YBBENCH_GO_HELPERS=1). The
// scripts load it only when one of those asks (k6-scripts/lib/go_helpers.js,
// lib/db.js), which `ybbench run` and the compose k6 do where their k6 has
// it; without it they run the same statements through xk6-sql and compute
// the same in JavaScript.
package ybbench

import (
	mrand "math/rand/v2"
	"strconv"
	"time"

	"github.com/grafana/sobek"
)

func init() {
	register("k6/x/ybbench", new(root))
}

type root struct{}

type module struct {
	rt      *sobek.Runtime
	vu      vu
	exports exports
}

func (*root) NewModuleInstance(v vu) instance {
	installLatencySink(v)
	m := &module{rt: v.Runtime(), vu: v}
	// Functions of the form func(sobek.FunctionCall) sobek.Value: sobek calls
	// them directly, not through reflect as it calls a plain Go func.
	m.exports.Named = map[string]any{
		"ycsbKeyName":     m.ycsbKeyName,
		"ycsbKeyChooser":  m.ycsbKeyChooser,
		"ycsbFieldMaker":  m.ycsbFieldMaker,
		"ycsbFieldFiller": m.ycsbFieldFiller,
		"kvRowFiller":     m.kvRowFiller,
		"sqlRowFiller":    m.sqlRowFiller,
		"uniformKeys":     m.uniformKeys,
		"sqlUpdatesStep":  m.sqlUpdatesStep,
		"latencySummary":  m.latencySummary,
		"perSecondSeries": m.perSecondSeries,
		"iterationInTest": m.iterationInTest,
		"pgconnSession":   m.pgconnSession,
		"innerLoop":       m.innerLoop,
		"clockMs":         m.clockMs,
	}
	return m
}

func (m *module) Exports() exports { return m.exports }

// The process's monotonic clock, for clockMs.
var clockStart = time.Now()

// clockMs(): ms on a monotonic clock with ns resolution (JavaScript's
// Date.now() counts whole ms): tpcc's statements style times each attempt
// of a transaction apart from its retries with it.
func (m *module) clockMs(sobek.FunctionCall) sobek.Value {
	return m.rt.ToValue(float64(time.Since(clockStart).Nanoseconds()) / 1e6)
}

func (m *module) keynum(v sobek.Value) uint64 {
	n := v.ToFloat()
	if n < 0 || n != float64(uint64(n)) {
		panic(m.rt.NewTypeError("a key number must be a whole number >= 0, not %v", v))
	}
	return uint64(n)
}

// ycsbKeyName(keynum): "user" + fnvhash64(keynum).
func (m *module) ycsbKeyName(c sobek.FunctionCall) sobek.Value {
	return m.rt.ToValue(keyName(m.keynum(c.Argument(0))))
}

// ycsbKeyChooser(distribution, recordCount, theta): a function returning the
// next key name to ask for.
func (m *module) ycsbKeyChooser(c sobek.FunctionCall) sobek.Value {
	next := chooser(c.Argument(0).String(), m.keynum(c.Argument(1)), c.Argument(2).ToFloat())
	return m.rt.ToValue(func(sobek.FunctionCall) sobek.Value { return m.rt.ToValue(keyName(next())) })
}

// fields reads (length[, poolChars]) and makes that VU's field maker.
func (m *module) fields(c sobek.FunctionCall) func(string) string {
	pool := 16384 // lib/ycsb.js's default
	if p := c.Argument(1); !sobek.IsUndefined(p) {
		pool = int(p.ToInteger())
	}
	return fieldMaker(int(c.Argument(0).ToInteger()), pool)
}

// stamp is a call's optional string argument i ("" when absent).
func stamp(c sobek.FunctionCall, i int) string {
	if a := c.Argument(i); !sobek.IsUndefined(a) && !sobek.IsNull(a) {
		return a.String()
	}
	return ""
}

// ycsbFieldMaker(length[, poolChars]): a function ([stamp]) returning a
// field value, starting with stamp when one is given.
func (m *module) ycsbFieldMaker(c sobek.FunctionCall) sobek.Value {
	field := m.fields(c)
	return m.rt.ToValue(func(c sobek.FunctionCall) sobek.Value { return m.rt.ToValue(field(stamp(c, 0))) })
}

// ycsbFieldFiller(length[, poolChars]): a function (array, from, count[,
// head]) that sets array[from], ..., array[from + count - 1] to field
// values: one call for a record's fields. With head, field f starts with
// `<head><f>:`: ycsb-load's stamps for ybbench verify, which cost 11 µs of
// its 62 per insert when the script made them (A/B in
// docs/client-efficiency.md).
func (m *module) ycsbFieldFiller(c sobek.FunctionCall) sobek.Value {
	field := m.fields(c)
	return m.rt.ToValue(func(c sobek.FunctionCall) sobek.Value {
		a := c.Argument(0).ToObject(m.rt)
		from, count, head := int(c.Argument(1).ToInteger()), int(c.Argument(2).ToInteger()), stamp(c, 3)
		for f := range count {
			s := ""
			if head != "" {
				s = head + strconv.Itoa(f) + ":"
			}
			if err := a.Set(strconv.Itoa(from+f), field(s)); err != nil {
				panic(err)
			}
		}
		return sobek.Undefined()
	})
}

// kvRowFiller(prefix, keyBytes, valueBytes[, arrayBuffers]): a function
// (array, from, first, count) that sets array[from], array[from + 1], ...
// to the key and value of rows first, first + 1, ... first + count - 1: a
// statement's parameters in one call. Values are Go byte slices, which
// xk6-sql gets back as they are; or, for our statement path, ArrayBuffers
// over the same bytes, which cost no reflect-made wrapper (kv-load A/B in
// docs/client-efficiency.md).
func (m *module) kvRowFiller(c sobek.FunctionCall) sobek.Value {
	key := paddedKeyMaker(c.Argument(0).String(), int(c.Argument(1).ToInteger()))
	value := randomValueMaker(int(c.Argument(2).ToInteger()))
	bytes := func(b []byte) any { return b }
	if c.Argument(3).ToBoolean() {
		bytes = func(b []byte) any { return m.rt.NewArrayBuffer(b) }
	}
	return m.rt.ToValue(func(c sobek.FunctionCall) sobek.Value {
		a := c.Argument(0).ToObject(m.rt)
		from, first, count := int(c.Argument(1).ToInteger()), m.keynum(c.Argument(2)), int(c.Argument(3).ToInteger())
		for i := range count {
			row := first + uint64(i)
			if err := a.Set(strconv.Itoa(from+2*i), key(row)); err != nil {
				panic(err)
			}
			if err := a.Set(strconv.Itoa(from+2*i+1), bytes(value(row))); err != nil {
				panic(err)
			}
		}
		return sobek.Undefined()
	})
}

// sqlRowFiller(prefix, rowBytes): a function (array, from, index) that sets
// array[from] and array[from + 1] to sql-inserts' key and value of that
// index: one call for the statement's parameters.
func (m *module) sqlRowFiller(c sobek.FunctionCall) sobek.Value {
	row := sqlRowMaker(c.Argument(0).String(), int(c.Argument(1).ToInteger()))
	return m.rt.ToValue(func(c sobek.FunctionCall) sobek.Value {
		a := c.Argument(0).ToObject(m.rt)
		from := int(c.Argument(1).ToInteger())
		k, v := row(m.keynum(c.Argument(2)))
		if err := a.Set(strconv.Itoa(from), k); err != nil {
			panic(err)
		}
		if err := a.Set(strconv.Itoa(from+1), v); err != nil {
			panic(err)
		}
		return sobek.Undefined()
	})
}

// uniformKeys(prefix, count[, width, from]): a function returning the key
// of a uniform random index n in [from, from + count), `<prefix>:<n>`, or
// zero-padded to width bytes when width > 0 (the key-value workloads'
// keys, paddedKeyMaker): a read's key in one call into Go.
func (m *module) uniformKeys(c sobek.FunctionCall) sobek.Value {
	prefix, count := c.Argument(0).String(), m.keynum(c.Argument(1))
	if count == 0 {
		panic(m.rt.NewTypeError("uniformKeys needs a key count >= 1"))
	}
	var from uint64
	if !sobek.IsUndefined(c.Argument(3)) {
		from = m.keynum(c.Argument(3))
	}
	head := prefix + ":"
	name := func(n uint64) string { return head + strconv.FormatUint(n, 10) }
	if width := c.Argument(2).ToInteger(); width > 0 {
		name = paddedKeyMaker(prefix, int(width))
	}
	return m.rt.ToValue(func(sobek.FunctionCall) sobek.Value {
		return m.rt.ToValue(name(from + mrand.Uint64N(count)))
	})
}

// sqlUpdatesStep(prefix, keys, writePercent, tag): a function (i, readArgs,
// updateArgs) that sets the parameters of what sql-updates' iteration i
// sends (updates.go) and returns "" for an update, or for a read the prefix
// its value must start with: the schedule, key and value in one call.
func (m *module) sqlUpdatesStep(c sobek.FunctionCall) sobek.Value {
	keys := m.keynum(c.Argument(1))
	if keys == 0 {
		panic(m.rt.NewTypeError("sqlUpdatesStep needs a key count >= 1"))
	}
	step := sqlUpdatesStep(c.Argument(0).String(), newUpdateSchedule(keys, c.Argument(2).ToFloat()), c.Argument(3).String())
	return m.rt.ToValue(func(c sobek.FunctionCall) sobek.Value {
		key, value, expect := step(m.keynum(c.Argument(0)))
		if expect != "" {
			set(m.rt, c.Argument(1), 1, key)
		} else {
			set(m.rt, c.Argument(2), 1, value)
			set(m.rt, c.Argument(2), 2, key)
		}
		return m.rt.ToValue(expect)
	})
}

// set sets array a's element i to a string.
func set(rt *sobek.Runtime, a sobek.Value, i int, s string) {
	if err := a.ToObject(rt).Set(strconv.Itoa(i), s); err != nil {
		panic(err)
	}
}

// iterationInTest(): k6/execution's exec.scenario.iterationInTest, the
// iteration's number in its scenario across VUs and instances, without the
// reflect-called getter of a new scenario object (k6-scripts/lib/run.js).
func (m *module) iterationInTest(sobek.FunctionCall) sobek.Value {
	st := m.vu.State()
	if st == nil || st.GetScenarioGlobalVUIter == nil {
		panic(m.rt.NewTypeError("iterationInTest() is not available in the init context"))
	}
	return m.rt.ToValue(st.GetScenarioGlobalVUIter())
}

// latencySummary(): {all, ops: {op: stats}} of iteration_duration in ms,
// or null when k6's own sink stayed (installLatencySink says when).
func (m *module) latencySummary(sobek.FunctionCall) sobek.Value {
	if installed == nil {
		return sobek.Null()
	}
	return m.rt.ToValue(installed.summary())
}
