package ybbench

import (
	"context"
	"net"
	"sync"
	"time"
)

// Cancelling a statement whose iteration's context ended (the run's end, a
// VU stopped), as xk6-sql's statements under the VU's context are.
//
// k6 gives each iteration a context of its own, and pgconn watching one for
// each statement (a context.AfterFunc and a channel each time) cost 2 µs
// per insert (A/B, sql-inserts on this path: 41.1 -> 39.1 µs/op,
// docs/client-efficiency.md "What keeps the workloads cheap"). So statements run under
// context.Background, and one goroutine looks at the sessions with a
// statement in flight four times a second: one whose context has ended gets
// its connection's deadline set to now, which is what pgconn's own
// DeadlineContextWatcherHandler does. The statement then fails, pgconn
// closes the connection and sends the server a cancel request, and the
// session throws the context's error and reconnects at its next statement.
const cancelCheckEvery = 250 * time.Millisecond

// pgconn sends that cancel request from a goroutine of its own (asyncClose).
// The iteration waits for it, so that k6 cannot exit first and leave the
// statement running on the server (a lost race CI once hit); at most this
// long, for a server that no longer answers.
const cancelSentWithin = 3 * time.Second

var watched = struct {
	sync.Mutex
	sessions map[*pgSession]struct{}
	start    sync.Once // the watchdog, with the first session
}{sessions: map[*pgSession]struct{}{}}

// A session's statement in flight, as the watchdog sees it.
type flight struct {
	sync.Mutex
	ctx         context.Context // nil: none in flight
	conn        net.Conn
	interrupted bool // the watchdog set conn's deadline
}

func watch(s *pgSession) {
	watched.Lock()
	defer watched.Unlock()
	watched.sessions[s] = struct{}{}
	watched.start.Do(func() { go cancelEnded() })
}

func unwatch(s *pgSession) {
	watched.Lock()
	defer watched.Unlock()
	delete(watched.sessions, s)
}

func cancelEnded() {
	for range time.Tick(cancelCheckEvery) {
		watched.Lock()
		for s := range watched.sessions {
			s.flight.Lock()
			if f := &s.flight; f.ctx != nil && !f.interrupted && f.ctx.Err() != nil {
				f.interrupted = true
				_ = f.conn.SetDeadline(time.Now()) // the statement's read fails
			}
			s.flight.Unlock()
		}
		watched.Unlock()
	}
}

// takeOff marks a statement under ctx in flight on s.conn.
func (s *pgSession) takeOff(ctx context.Context) {
	s.flight.Lock()
	s.flight.ctx, s.flight.conn = ctx, s.conn.Conn()
	s.flight.Unlock()
}

// land marks it done; whether the watchdog interrupted it. A deadline set
// just as the statement ended is lifted, so that it cannot fail the next.
func (s *pgSession) land() bool {
	s.flight.Lock()
	interrupted := s.flight.interrupted
	s.flight.ctx, s.flight.conn, s.flight.interrupted = nil, nil, false
	s.flight.Unlock()
	switch {
	case !interrupted:
	case s.conn.IsClosed(): // the cancel request is on its way
		select {
		case <-s.conn.CleanupDone():
		case <-time.After(cancelSentWithin):
		}
	default:
		_ = s.conn.Conn().SetDeadline(time.Time{})
	}
	return interrupted
}
