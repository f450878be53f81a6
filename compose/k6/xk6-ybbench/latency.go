package ybbench

import (
	"math"
	"sync"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// k6 keeps every iteration_duration sample in its end-of-test summary sink
// (a slice of float64 that is sorted for each percentile): k6's memory
// grows with the length of a run, ~1.8 GB after 90 s of empty iterations.
// latencySink takes that sink's place: per-op HdrHistograms of fixed size,
// percentiles to 3 significant digits (0.1%), count, min, max and avg exact.
// It is the only copy k6 keeps; Prometheus gets its own (native histograms).

const (
	lowestNs  = 1_000                     // 1 µs: finer than k6 reports
	highestNs = int64(time.Hour)          // longer iterations count as 1 h in percentiles (max stays exact)
	digits    = 3                         // 0.1% relative error
	opTag     = "op"                      // lib/metrics.js tagIteration
	nsPerMs   = float64(time.Millisecond) // k6 trends of time are in ms
)

type latency struct {
	h        *hdrhistogram.Histogram
	count    float64
	sum      float64
	min, max float64
}

func newLatency() *latency {
	return &latency{h: hdrhistogram.New(lowestNs, highestNs, digits), min: math.Inf(1), max: math.Inf(-1)}
}

func (l *latency) add(ms float64) {
	ns := int64(math.Round(ms * nsPerMs))
	_ = l.h.RecordValue(min(max(ns, 0), highestNs)) // clamped into range: no error
	l.count++
	l.sum += ms
	l.min = math.Min(l.min, ms)
	l.max = math.Max(l.max, ms)
}

// stats in k6's summaryTrendStats names, in ms.
func (l *latency) stats() map[string]float64 {
	if l.count == 0 {
		return nil
	}
	p := func(q float64) float64 { return float64(l.h.ValueAtQuantile(q)) / nsPerMs }
	return map[string]float64{
		"count": l.count, "avg": l.sum / l.count, "min": l.min, "max": l.max,
		"med": p(50), "p(90)": p(90), "p(95)": p(95), "p(99)": p(99), "p(99.9)": p(99.9),
	}
}

type latencySink struct {
	mu     sync.Mutex
	all    *latency
	ops    map[string]*latency
	series map[string]*opSeries // per second (series.go)
}

var (
	installed     *latencySink
	installedOnce sync.Once
)

func (s *latencySink) Add(smp sample) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.all.add(smp.Value)
	op, _ := smp.Tags.Get(opTag)
	l := s.ops[op]
	if l == nil {
		l = newLatency()
		s.ops[op] = l
	}
	l.add(smp.Value)
	s.addSecond(op, smp.Time, smp.Value)
}

func (s *latencySink) IsEmpty() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.all.count == 0
}

// Format is what k6's REST API shows.
func (s *latencySink) Format(time.Duration) map[string]float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.all.stats()
}

// summary is what handleSummary reads (lib/summary.js): all iterations, and
// each op's.
func (s *latencySink) summary() map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	ops := make(map[string]any, len(s.ops))
	for op, l := range s.ops {
		ops[op] = l.stats()
	}
	return map[string]any{"all": s.all.stats(), "ops": ops}
}

// installLatencySink puts the bounded sink in place of iteration_duration's,
// once per k6 process, from the init context of the first VU (before any
// sample flows). Not from the init runner (__VU 0): k6 attaches the
// thresholds after it and before the VUs, and a threshold on the whole
// iteration_duration needs k6's own sink (k6 runs thresholds only on its
// sink types), which then stays: the summary takes k6's numbers.
func installLatencySink(v vu) {
	if id := v.Runtime().Get("__VU"); id == nil || id.ToInteger() == 0 {
		return
	}
	installedOnce.Do(func() {
		env := v.InitEnv()
		if env == nil || env.Registry == nil {
			return
		}
		m := env.Registry.Get(iterationDuration)
		if m == nil || len(m.Thresholds.Thresholds) > 0 {
			return
		}
		installed = &latencySink{all: newLatency(), ops: map[string]*latency{}}
		m.Sink = installed
	})
}

var _ sink = (*latencySink)(nil)
