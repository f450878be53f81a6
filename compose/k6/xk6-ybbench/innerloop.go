package ybbench

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/grafana/sobek"
	"github.com/jackc/pgx/v5/pgconn"
)

// innerLoop(dsn, spec): a function (param) that runs spec.ops operations of
// a workload in Go, one k6 iteration for all of them (OPS_PER_ITERATION,
// k6-scripts/lib/loop.js): no return to JavaScript between statements.
// Each operation is what one iteration of the script's JavaScript path
// does, counted the same way: its own iterations{op} and
// iteration_duration{op} samples (k6's own end-of-iteration sample is
// tagged op=loop), retries of 40001/40P01 up to MAX_RETRIES in
// ybbench_retries{op}, a failure in ybbench_errors{op, sqlstate,
// sqlstate_class} (its first per op and SQLSTATE in the log), a row not
// found in ybbench_keys_missing{op}, a failed write's keys in a
// `ybbench-unacked` line. Operation j of iteration n is number n x ops + j
// (a key index for sql-inserts, a schedule step for sql-updates).
//
// The loop starts no statement once the scenario's DURATION is over (k6
// would let the iteration run on for its gracefulStop) or the iteration's
// context has ended; a statement running when the context ends is
// cancelled as on the JavaScript path (pgcancel.go) and not counted. The
// operations the iteration did not get to, and a cancelled one, are logged
// as unacknowledged, so that `ybbench verify` takes their keys as unknown.
//
// spec: {workload, ops, maxRetries, table, prefix?, keys?, rowBytes?,
// bound?, writePercent?, ycsb's fieldCount, fieldLength, readProportion,
// distribution, recordCount, theta}; param: sql-inserts' key prefix,
// sql-updates' and ycsb's run tag (from setup()), nothing for sql-selects.
func (m *module) innerLoop(c sobek.FunctionCall) sobek.Value {
	env := m.vu.InitEnv()
	if env == nil || env.Registry == nil {
		panic(m.rt.NewTypeError("innerLoop() must be called in the init context"))
	}
	spec := c.Argument(1).ToObject(m.rt)
	num := func(name string) uint64 {
		v := spec.Get(name)
		if v == nil || sobek.IsUndefined(v) {
			return 0
		}
		return m.keynum(v)
	}
	l := &loop{
		m: m, workload: spec.Get("workload").String(), ops: num("ops"), maxRetries: int(num("maxRetries")),
		table: spec.Get("table").String(), logged: map[string]bool{},
	}
	if d := spec.Get("duration"); d != nil && !sobek.IsUndefined(d) {
		var err error
		if l.length, err = time.ParseDuration(d.String()); err != nil {
			panic(m.rt.NewTypeError("innerLoop(): duration %q: %v", d.String(), err))
		}
	}
	for name, dst := range map[string]**metric{
		"iterations": &l.iterations, iterationDuration: &l.duration, "ybbench_errors": &l.errors,
		"ybbench_retries": &l.retries, "ybbench_keys_missing": &l.missing,
	} {
		if *dst = env.Registry.Get(name); *dst == nil {
			panic(m.rt.NewTypeError("innerLoop(): no metric %s (lib/metrics.js declares the ybbench ones)", name))
		}
	}
	if l.ops < 1 {
		panic(m.rt.NewTypeError("innerLoop(): ops must be >= 1"))
	}
	config, err := pgconn.ParseConfig(c.Argument(0).String())
	if err != nil {
		panic(m.rt.NewGoError(err))
	}
	l.s = &pgSession{m: m, vu: m.vu, config: config, text: make([]byte, 0, 1024)}
	switch l.workload {
	case "sql-inserts":
		rowBytes, bound := int(num("rowBytes")), num("bound")
		insert := fmt.Sprintf("INSERT INTO %s (k, v) VALUES ($1, $2)", l.table)
		l.step = func(prefix string) func(uint64) (op, bool) {
			row := sqlRowMaker(prefix, rowBytes)
			return func(n uint64) (op, bool) {
				if bound > 0 && n >= bound {
					return op{}, false
				}
				k, v := row(n)
				return op{name: "insert", text: insert, params: []string{k, v}, unacked: true, affected: true}, true
			}
		}
	case "sql-selects":
		keys := uniformKeyMaker(spec.Get("prefix").String(), num("keys"))
		sel := fmt.Sprintf("SELECT k, v FROM %s WHERE k = $1", l.table)
		l.step = func(string) func(uint64) (op, bool) {
			return func(uint64) (op, bool) {
				return op{name: "select", text: sel, params: []string{keys()}, oneRow: true}, true
			}
		}
	case "sql-updates":
		keys := num("keys")
		sched := newUpdateSchedule(keys, spec.Get("writePercent").ToFloat())
		prefix := spec.Get("prefix").String()
		sel := fmt.Sprintf("SELECT k, v FROM %s WHERE k = $1", l.table)
		upd := fmt.Sprintf("UPDATE %s SET v = $1 WHERE k = $2", l.table)
		l.step = func(tag string) func(uint64) (op, bool) {
			step := sqlUpdatesStep(prefix, sched, tag)
			return func(i uint64) (op, bool) {
				key, value, expect := step(i)
				if expect == "" {
					return op{name: "update", text: upd, params: []string{value, key}, unacked: true, affected: true}, true
				}
				return op{name: "select", text: sel, params: []string{key}, oneRow: true, expect: expect}, true
			}
		}
	case "ycsb":
		l.step = ycsbStep(l.table, int(num("fieldCount")), int(num("fieldLength")), num("bound"),
			spec.Get("readProportion").ToFloat(),
			chooser(spec.Get("distribution").String(), num("recordCount"), spec.Get("theta").ToFloat()))
	default:
		panic(m.rt.NewTypeError("OPS_PER_ITERATION: %s has no inner loop in Go", l.workload))
	}
	return m.rt.ToValue(l.run)
}

// A metric of k6's registry, as *metrics.Metric on either k6.
type metric = metricT

type loop struct {
	m                                              *module
	s                                              *pgSession
	workload, table                                string
	ops                                            uint64
	maxRetries                                     int
	length                                         time.Duration // the scenario's DURATION (0: none)
	iterations, duration, errors, retries, missing *metric
	step                                           func(string) func(uint64) (op, bool)
	param                                          string
	next                                           func(uint64) (op, bool)
	logged                                         map[string]bool // op + SQLSTATE already in the log
}

// One operation: a statement and how its outcome is judged.
type op struct {
	name, text string
	params     []string
	unacked    bool   // a failed write logs its key index
	affected   bool   // a write must affect one row, or it is a key missing
	oneRow     bool   // a point read must return one row, or it is a key missing
	expect     string // ... whose v starts with this
}

func uniformKeyMaker(prefix string, count uint64) func() string {
	head := prefix + ":"
	pick := uniform(count)
	return func() string { return head + strconv.FormatUint(pick(), 10) }
}

// run(param): one k6 iteration of l.ops operations; false when it ran none
// (cutRuns).
func (l *loop) run(c sobek.FunctionCall) sobek.Value {
	st := l.m.vu.State()
	if st == nil || st.GetScenarioGlobalVUIter == nil {
		panic(l.m.rt.NewTypeError("the inner loop runs only in a VU's iteration"))
	}
	if p := stamp(c, 0); l.next == nil || p != l.param {
		l.param, l.next = p, l.step(p)
	}
	ctx := l.s.ctx()
	ctm := st.Tags.GetCurrentValues()
	tags := map[string]*tagSet{}
	tagsOf := func(name string) *tagSet {
		t := tags[name]
		if t == nil {
			t = ctm.Tags.With(opTag, name)
			tags[name] = t
		}
		return t
	}
	count := func(m *metric, t *tagSet, at time.Time, v float64) {
		pushIfNotDone(ctx, st.Samples, sample{TimeSeries: timeSeries{Metric: m, Tags: t}, Time: at, Metadata: ctm.Metadata, Value: v})
	}
	var deadline time.Time
	if ss := getScenarioState(ctx); ss != nil && l.length > 0 {
		deadline = ss.StartTime.Add(l.length)
	}
	it := st.GetScenarioGlobalVUIter()
	if !cutRuns(it, deadline) {
		time.Sleep(idleFor)
		return l.m.rt.ToValue(false)
	}
	first := it * l.ops
	for j := range l.ops {
		n := first + j
		o, ok := l.next(n)
		if !ok {
			break // past the load's key bound
		}
		if ctx.Err() != nil || !deadline.IsZero() && time.Now().After(deadline) {
			l.unacked(st, n, l.ops-j) // never sent
			break
		}
		t := tagsOf(o.name)
		start := time.Now()
		rows, affected, v, err := l.attempt(ctx, o, func(at time.Time) { count(l.retries, t, at, 1) })
		end := time.Now()
		if ctx.Err() != nil {
			// Interrupted: not counted, as k6 does not count an iteration its
			// context ended in; its write and the rest are unknown.
			l.unacked(st, n, l.ops-j)
			break
		}
		pushIfNotDone(ctx, st.Samples, samples{
			{TimeSeries: timeSeries{Metric: l.duration, Tags: t}, Time: end, Metadata: ctm.Metadata, Value: metricD(end.Sub(start))},
			{TimeSeries: timeSeries{Metric: l.iterations, Tags: t}, Time: end, Metadata: ctm.Metadata, Value: 1},
		})
		switch {
		case err != nil:
			state := sqlstateOf(err)
			class := state
			if state != "none" {
				class = state[:2]
			}
			count(l.errors, t.With("sqlstate", state).With("sqlstate_class", class), end, 1)
			l.logFirst(st, o.name, state, err)
			if o.unacked {
				l.unacked(st, n, 1)
			}
		case o.affected && affected != 1, o.oneRow && (rows != 1 || !strings.HasPrefix(v, o.expect)):
			count(l.missing, t, end, 1)
		}
	}
	return l.m.rt.ToValue(true)
}

// The iterations k6 starts after DURATION and before its own timer stops
// it starting more run nothing: they return false, and the script tags
// them idle (not an iteration of the loop), after a pause so as not to
// spin. Which those are is decided in the order of iteration numbers, so
// that the loop's iterations stay numbers 0, 1, ... with none missing,
// which `ybbench verify` counts on: the first iteration to find DURATION
// over sets the cut just past every number that already got here. A number
// below the cut still counts, its operations all logged as cut off: k6
// numbered it before a higher one that got here in time, and it was held
// up on the way. A number at or above the cut runs nothing, even one lower
// than the iteration that set the cut: k6 numbers an iteration (RunOnce)
// before its JavaScript calls the loop, so on a busy machine iteration n+1
// can get here before n, and both are past DURATION.
var cut struct {
	sync.Mutex
	set         bool
	at, started uint64 // the cut; 1 + the highest number that got here
}

const idleFor = 5 * time.Millisecond

func cutRuns(it uint64, deadline time.Time) bool {
	cut.Lock()
	defer cut.Unlock()
	if !cut.set && !deadline.IsZero() && time.Now().After(deadline) {
		cut.set, cut.at = true, cut.started
	}
	if cut.set {
		return it < cut.at
	}
	cut.started = max(cut.started, it+1)
	return true
}

var retryable = map[string]bool{"40001": true, "40P01": true}

// attempt runs o's statement with its retries (lib/metrics.js attempt):
// rows returned, rows affected, the first row's v, or the last error.
func (l *loop) attempt(ctx context.Context, o op, retried func(time.Time)) (int, int64, string, error) {
	for tries := 0; ; tries++ {
		rows, affected, v, err := l.s.execText(ctx, o.text, o.params, o.oneRow && o.expect != "")
		if err != nil && retryable[sqlstateOf(err)] && tries < l.maxRetries && ctx.Err() == nil {
			retried(time.Now())
			continue
		}
		return rows, affected, v, err
	}
}

// sqlstateOf: the server's SQLSTATE, or "none" for an error that never
// reached it (lib/db.js sqlstate).
func sqlstateOf(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && len(pe.Code) == 5 {
		return pe.Code
	}
	return "none"
}

// The log lines of lib/metrics.js, through k6's console logger.
func (l *loop) logFirst(st vuState, op, state string, err error) {
	k := op + " " + state
	if l.logged[k] {
		return
	}
	l.logged[k] = true
	st.Logger.WithField("source", "console").Warnf(
		"%s failed (SQLSTATE %s): %s; further %s errors of this VU with this SQLSTATE are only counted", op, state, err, op)
}

func (l *loop) unacked(st vuState, first, rows uint64) {
	st.Logger.WithField("source", "console").Warnf("ybbench-unacked first=%d rows=%d", first, rows)
}

// execText runs a statement of text parameters on the session, as run()
// does for the script, without JavaScript values: rows returned, rows
// affected and, when asked, the first row's second column (v).
func (s *pgSession) execText(ctx context.Context, text string, params []string, wantV bool) (int, int64, string, error) {
	if s.conn == nil {
		conn, err := pgconn.ConnectConfig(ctx, s.config)
		if err != nil {
			return 0, 0, "", err
		}
		s.conn, s.stmts = conn, map[string]*statement{}
		watch(s)
	}
	st := s.stmts[text]
	if st == nil {
		sd, err := s.conn.Prepare(ctx, fmt.Sprintf("ybbench_%d", len(s.stmts)), text, nil)
		if err != nil {
			return 0, 0, "", s.dropIfClosed(err)
		}
		st = newStatement(s.m.rt, sd)
		s.stmts[text] = st
	}
	s.params, s.text = s.params[:0], s.text[:0]
	for _, p := range params {
		s.text = append(s.text, p...)
	}
	// Sliced once all are in: appending may have moved the buffer.
	off := 0
	for _, p := range params {
		s.params = append(s.params, s.text[off:off+len(p):off+len(p)])
		off += len(p)
	}
	s.takeOff(ctx)
	rr := s.conn.ExecStatement(context.Background(), st.sd, s.params, nil, st.results)
	rows, v := 0, ""
	for rr.NextRow() {
		if rows == 0 && wantV {
			if vals := rr.Values(); len(vals) > 1 {
				v = string(vals[1])
			}
		}
		rows++
	}
	tag, err := rr.Close()
	if s.land() && err != nil {
		err = ctx.Err()
	}
	if err != nil {
		return rows, 0, v, s.dropIfClosed(err)
	}
	return rows, tag.RowsAffected(), v, nil
}

func (s *pgSession) dropIfClosed(err error) error {
	if s.conn != nil && s.conn.IsClosed() {
		s.drop()
	}
	return err
}
