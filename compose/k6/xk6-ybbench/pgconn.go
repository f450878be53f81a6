package ybbench

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/grafana/sobek"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
)

// pgconnSession(dsn): {query, exec, close} of one connection that runs the
// workloads' statements over pgx's wire-protocol layer (pgconn), without
// xk6-sql and database/sql in between (DB_DRIVER=pgconn, lib/db.js).
// Measured on sql-selects (a CPU profile of k6 with pgx under xk6-sql):
// database/sql's pool, the driver.Value conversions, rows scanned into
// maps and the reflect call into xk6-sql took ~40% of k6's CPU per
// statement, as much again as pgx's own work and the socket writes.
//
// What the server sees is what pgx under xk6-sql sends: each statement text
// prepared once per connection, then Bind/Execute/Sync, one round trip.
// What the script sees is what xk6-sql returns: query gives an array of
// {column: value} rows, exec an object with rowsAffected(); errors throw
// with pgx's words, "... (SQLSTATE 23505)". One difference, on purpose: an
// error after the first rows throws (xk6-sql returns the rows read so far).
type pgSession struct {
	m      *module
	vu     vu
	config *pgconn.Config
	conn   *pgconn.PgConn
	stmts  map[string]*statement
	params [][]byte
	format []int16
	// Text parameters' bytes, one buffer every statement reuses: pgconn
	// copies them into its message before ExecStatement returns (a copy
	// each was 5% of ycsb-load's CPU in a profile).
	text  []byte
	spans []span
	// exec's results: objects whose rowsAffected() reads a symbol, made
	// from result; those of small counts made once per session and frozen
	// (making one per statement was 4% of sql-inserts' CPU in a profile).
	result *sobek.Object
	counts [64]*sobek.Object
	freeze sobek.Callable
	flight flight // pgcancel.go
}

var rowsAffected = sobek.NewSymbol("rowsAffected")

// params[i] is text[start:end].
type span struct{ i, start, end int }

// A prepared statement and how its result columns become JavaScript values.
type statement struct {
	sd      *pgconn.StatementDescription
	results []int16 // bytea in binary, the rest in text
	keys    rowKeys
	decode  []func(*sobek.Runtime, []byte) sobek.Value
}

func (m *module) pgconnSession(c sobek.FunctionCall) sobek.Value {
	// The password comes from PGPASSWORD or PGPASSFILE, never the DSN.
	config, err := pgconn.ParseConfig(c.Argument(0).String())
	if err != nil {
		panic(m.rt.NewGoError(err))
	}
	// text is never nil: an empty string is an empty parameter, not NULL.
	s := &pgSession{m: m, vu: m.vu, config: config, result: m.rt.NewObject(), text: make([]byte, 0, 1024)}
	freeze, ok := sobek.AssertFunction(m.rt.Get("Object").ToObject(m.rt).Get("freeze"))
	if !ok {
		panic(m.rt.NewTypeError("Object.freeze is not a function"))
	}
	s.freeze = freeze
	if err := s.result.Set("rowsAffected", func(c sobek.FunctionCall) sobek.Value {
		return c.This.ToObject(m.rt).GetSymbol(rowsAffected)
	}); err != nil {
		panic(err)
	}
	o := m.rt.NewObject()
	for name, fn := range map[string]func(sobek.FunctionCall) sobek.Value{
		"query": func(c sobek.FunctionCall) sobek.Value { return s.run(c, true) },
		"exec":  func(c sobek.FunctionCall) sobek.Value { return s.run(c, false) },
		"close": s.close,
	} {
		if err := o.Set(name, fn); err != nil {
			panic(err)
		}
	}
	return o
}

// Statements end with the VU's context, as in xk6-sql: one still running
// when k6 stops the VU is cancelled (pgcancel.go).
func (s *pgSession) ctx() context.Context {
	if c := s.vu.Context(); c != nil {
		return c
	}
	return context.Background()
}

func (s *pgSession) throw(err error) {
	// A connection that broke (node down, restart, its context ended) is
	// replaced at the next statement, as database/sql replaces a bad
	// connection of its pool.
	if s.conn != nil && s.conn.IsClosed() {
		s.drop()
	}
	panic(s.m.rt.NewGoError(err))
}

// drop forgets the connection, and the watchdog its session (pgcancel.go):
// the next statement connects anew.
func (s *pgSession) drop() {
	unwatch(s)
	s.conn, s.stmts = nil, nil
}

// run(statement, parameters...): rows, or the command's result.
func (s *pgSession) run(c sobek.FunctionCall, query bool) sobek.Value {
	ctx := s.ctx()
	if err := ctx.Err(); err != nil {
		s.throw(err)
	}
	if s.conn == nil {
		conn, err := pgconn.ConnectConfig(ctx, s.config)
		if err != nil {
			s.throw(err)
		}
		s.conn, s.stmts = conn, map[string]*statement{}
		watch(s)
	}
	text := c.Argument(0).String()
	st := s.stmts[text]
	if st == nil {
		sd, err := s.conn.Prepare(ctx, fmt.Sprintf("ybbench_%d", len(s.stmts)), text, nil)
		if err != nil {
			s.throw(err)
		}
		st = newStatement(s.m.rt, sd)
		s.stmts[text] = st
	}
	args := c.Arguments[min(1, len(c.Arguments)):]
	if len(args) != len(st.sd.ParamOIDs) {
		s.throw(fmt.Errorf("expected %d arguments, got %d", len(st.sd.ParamOIDs), len(args)))
	}
	s.encode(args)
	// Not under ctx: the watchdog cancels it when ctx ends (pgcancel.go).
	s.takeOff(ctx)
	rr := s.conn.ExecStatement(context.Background(), st.sd, s.params, s.format, st.results)
	var rows []any
	for rr.NextRow() {
		if query {
			rows = append(rows, st.newRow(s.m.rt, rr.Values()))
		}
	}
	tag, err := rr.Close()
	if s.land() && err != nil {
		err = ctx.Err() // what pgconn says of a statement its context ended
	}
	if err != nil {
		s.throw(err)
	}
	if query {
		return s.m.rt.NewArray(rows...)
	}
	return s.execResult(tag.RowsAffected())
}

func (s *pgSession) execResult(n int64) *sobek.Object {
	shared := n >= 0 && n < int64(len(s.counts))
	if shared && s.counts[n] != nil {
		return s.counts[n]
	}
	r := s.m.rt.CreateObject(s.result)
	if err := r.SetSymbol(rowsAffected, n); err != nil {
		panic(err)
	}
	if shared {
		if _, err := s.freeze(sobek.Undefined(), r); err != nil {
			panic(err)
		}
		s.counts[n] = r
	}
	return r
}

// Parameters as lib/pq sends them: text, which the server reads as the
// parameter's type; byte arrays (kvRowFiller's values, ArrayBuffers) in
// binary, which for bytea is the bytes themselves.
func (s *pgSession) encode(args []sobek.Value) {
	s.params, s.format, s.text, s.spans = s.params[:0], s.format[:0], s.text[:0], s.spans[:0]
	for i, a := range args {
		var p []byte
		var f int16
		start, inText := len(s.text), true
		switch {
		case sobek.IsUndefined(a) || sobek.IsNull(a):
			inText = false
		case sobek.IsString(a):
			s.text = append(s.text, a.String()...)
		case sobek.IsNumber(a):
			if n := a.ToFloat(); n == float64(int64(n)) {
				s.text = strconv.AppendInt(s.text, int64(n), 10)
			} else {
				s.text = strconv.AppendFloat(s.text, n, 'g', -1, 64)
			}
		default:
			switch x := a.Export().(type) {
			case []byte:
				p, f, inText = x, pgtype.BinaryFormatCode, false
			case sobek.ArrayBuffer:
				p, f, inText = x.Bytes(), pgtype.BinaryFormatCode, false
			case bool:
				s.text = strconv.AppendBool(s.text, x)
			default:
				s.text = append(s.text, a.String()...)
			}
		}
		if inText {
			s.spans = append(s.spans, span{i, start, len(s.text)})
		}
		s.params, s.format = append(s.params, p), append(s.format, f)
	}
	// Sliced once all are in: appending may have moved the buffer.
	for _, sp := range s.spans {
		s.params[sp.i] = s.text[sp.start:sp.end:sp.end]
	}
}

func (s *pgSession) close(sobek.FunctionCall) sobek.Value {
	if s.conn != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		err := s.conn.Close(ctx)
		s.drop()
		if err != nil && !errors.Is(err, context.DeadlineExceeded) {
			panic(s.m.rt.NewGoError(err))
		}
	}
	return sobek.Undefined()
}

// Column types the workloads read, as JavaScript values like those xk6-sql
// gives through pgx: integers and floats as numbers, bool as boolean, bytea
// as bytes, everything else as its text.
func newStatement(rt *sobek.Runtime, sd *pgconn.StatementDescription) *statement {
	st := &statement{sd: sd}
	var names []string
	for _, f := range sd.Fields {
		format := int16(pgtype.TextFormatCode)
		var decode func(*sobek.Runtime, []byte) sobek.Value
		switch f.DataTypeOID {
		case pgtype.ByteaOID:
			format = pgtype.BinaryFormatCode
			decode = func(rt *sobek.Runtime, b []byte) sobek.Value {
				return rt.ToValue(rt.NewArrayBuffer(append([]byte(nil), b...)))
			}
		case pgtype.BoolOID:
			decode = func(rt *sobek.Runtime, b []byte) sobek.Value { return rt.ToValue(string(b) == "t") }
		case pgtype.Int2OID, pgtype.Int4OID, pgtype.Int8OID, pgtype.OIDOID:
			decode = func(rt *sobek.Runtime, b []byte) sobek.Value {
				n, _ := strconv.ParseInt(string(b), 10, 64) // the server's own text of an integer
				return rt.ToValue(n)
			}
		case pgtype.Float4OID, pgtype.Float8OID:
			decode = func(rt *sobek.Runtime, b []byte) sobek.Value {
				n, _ := strconv.ParseFloat(string(b), 64) // including NaN, Infinity
				return rt.ToValue(n)
			}
		default:
			decode = func(rt *sobek.Runtime, b []byte) sobek.Value { return rt.ToValue(string(b)) }
		}
		st.results = append(st.results, format)
		names = append(names, f.Name)
		st.decode = append(st.decode, decode)
	}
	st.keys = newRowKeys(names)
	return st
}
