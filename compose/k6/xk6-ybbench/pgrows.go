package ybbench

import (
	"slices"

	"github.com/grafana/sobek"
)

// A result row as the script sees it: an object of {column: value}, like
// xk6-sql's, whose values are made from the row's bytes when first read.
// Most workloads only count rows (sql-selects, YCSB reads): a column never
// read costs one copy of its bytes, not a string and a property of its own
// (A/B, ycsb c's 11 columns: 46.3 -> 39.3 µs/op, docs/client-efficiency.md "What keeps the
// workloads cheap").
// Column order, a later column of the same name winning, and values set or
// deleted by the script behave as on a plain object.
type row struct {
	rt     *sobek.Runtime
	st     *statement
	raw    [][]byte      // per key; nil: SQL NULL
	vals   []sobek.Value // per key, once read or set
	gone   []bool        // per key, deleted by the script
	extra  map[string]sobek.Value
	extras []string // extra's keys in the order set
}

// The keys of a statement's result rows: column names in order, each once;
// col[i] is the last column named keys[i].
type rowKeys struct {
	keys []string
	col  []int
}

func newRowKeys(names []string) rowKeys {
	var k rowKeys
	for i, n := range names {
		if j := slices.Index(k.keys, n); j >= 0 {
			k.col[j] = i
			continue
		}
		k.keys, k.col = append(k.keys, n), append(k.col, i)
	}
	return k
}

// newRow copies the row's values out of pgconn's buffer, which the next row
// overwrites: one allocation for all of them.
func (st *statement) newRow(rt *sobek.Runtime, values [][]byte) *sobek.Object {
	n := 0
	for _, i := range st.keys.col {
		n += len(values[i])
	}
	buf := make([]byte, 0, n)
	r := &row{rt: rt, st: st, raw: make([][]byte, len(st.keys.col))}
	for k, i := range st.keys.col {
		if v := values[i]; v != nil {
			start := len(buf)
			buf = append(buf, v...)
			r.raw[k] = buf[start:len(buf):len(buf)]
		}
	}
	return rt.NewDynamicObject(r)
}

// key is the index of a column name the script has not deleted, or -1.
func (r *row) key(name string) int {
	k := slices.Index(r.st.keys.keys, name)
	if k < 0 || r.gone != nil && r.gone[k] {
		return -1
	}
	return k
}

// values are made when first read or set: most rows are only counted.
func (r *row) values() []sobek.Value {
	if r.vals == nil {
		r.vals = make([]sobek.Value, len(r.raw))
	}
	return r.vals
}

func (r *row) Get(name string) sobek.Value {
	k := r.key(name)
	if k < 0 {
		return r.extra[name] // nil when absent: the prototype's, if any
	}
	vals := r.values()
	if vals[k] == nil {
		if b := r.raw[k]; b == nil {
			vals[k] = sobek.Null()
		} else {
			vals[k] = r.st.decode[r.st.keys.col[k]](r.rt, b)
		}
	}
	return vals[k]
}

func (r *row) Set(name string, v sobek.Value) bool {
	if k := r.key(name); k >= 0 {
		r.values()[k] = v
		return true
	}
	if _, ok := r.extra[name]; !ok {
		if r.extra == nil {
			r.extra = map[string]sobek.Value{}
		}
		r.extras = append(r.extras, name)
	}
	r.extra[name] = v
	return true
}

func (r *row) Has(name string) bool {
	if r.key(name) >= 0 {
		return true
	}
	_, ok := r.extra[name]
	return ok
}

func (r *row) Delete(name string) bool {
	if k := r.key(name); k >= 0 {
		if r.gone == nil {
			r.gone = make([]bool, len(r.raw))
		}
		r.gone[k] = true
		return true
	}
	if _, ok := r.extra[name]; ok {
		delete(r.extra, name)
		r.extras = slices.DeleteFunc(r.extras, func(s string) bool { return s == name })
	}
	return true
}

func (r *row) Keys() []string {
	keys := make([]string, 0, len(r.raw)+len(r.extras))
	for k, n := range r.st.keys.keys {
		if r.gone == nil || !r.gone[k] {
			keys = append(keys, n)
		}
	}
	return append(keys, r.extras...)
}
