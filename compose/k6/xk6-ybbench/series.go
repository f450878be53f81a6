package ybbench

import (
	"math"
	"sort"
	"time"

	"github.com/grafana/sobek"
)

// Each op's count and latency in every second of the run, kept by the
// latency sink (latency.go) from the same iteration_duration samples, and
// written by handleSummary into the run's folder (k6-scripts/lib/series.js,
// ybbench/core/schemas/per-second.schema.json): `ybbench compare` at 1 s
// without Prometheus. A second is [t, t+1) of the sample's time, the
// iteration's end. Its latency histogram is sparse and logarithmic, as
// DDSketch's (Masson et al., VLDB 2019): bucket i holds the values v (µs)
// with gamma^(i-1) < v <= gamma^i, gamma = (1+a)/(1-a), a = 1%, so any
// value read back as 2 gamma^i / (gamma + 1) is within 1% of the true one;
// values up to 1 µs go to bucket 0. ~300 buckets span 1 µs to 1 h. Unlike
// the sink's totals this grows with the run: a second holds the buckets its
// latencies fell in (~200 at most, a few KB), per op.

const (
	seriesAccuracy = 0.01
	seriesGamma    = (1 + seriesAccuracy) / (1 - seriesAccuracy)
)

var logGamma = math.Log(seriesGamma)

type second struct {
	count   uint64
	sumMs   float64
	buckets map[int32]uint64
}

type opSeries struct {
	seconds map[int64]*second
	lastT   int64 // the last second written to: samples come nearly in order
	last    *second
}

// seriesBucket is the bucket of a latency in ms.
func seriesBucket(ms float64) int32 {
	us := ms * 1000
	if !(us > 1) {
		return 0
	}
	return int32(math.Ceil(math.Log(us) / logGamma))
}

func (o *opSeries) add(at time.Time, ms float64) {
	t := at.Unix()
	if o.last == nil || t != o.lastT {
		s := o.seconds[t]
		if s == nil {
			s = &second{buckets: map[int32]uint64{}}
			o.seconds[t] = s
		}
		o.last, o.lastT = s, t
	}
	o.last.count++
	o.last.sumMs += ms
	o.last.buckets[seriesBucket(ms)]++
}

// addSecond records one sample; the caller holds the sink's lock.
func (s *latencySink) addSecond(op string, at time.Time, ms float64) {
	if s.series == nil {
		s.series = map[string]*opSeries{}
	}
	o := s.series[op]
	if o == nil {
		o = &opSeries{seconds: map[int64]*second{}}
		s.series[op] = o
	}
	o.add(at, ms)
}

// perSecond is {gamma, accuracy, ops: {op: [[t, count, sum_ms, [[bucket,
// count], ...]], ...]}}, seconds and buckets in order.
func (s *latencySink) perSecond() map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	ops := map[string]any{}
	for op, o := range s.series {
		ts := make([]int64, 0, len(o.seconds))
		for t := range o.seconds {
			ts = append(ts, t)
		}
		sort.Slice(ts, func(i, j int) bool { return ts[i] < ts[j] })
		rows := make([]any, 0, len(ts))
		for _, t := range ts {
			sec := o.seconds[t]
			idx := make([]int32, 0, len(sec.buckets))
			for i := range sec.buckets {
				idx = append(idx, i)
			}
			sort.Slice(idx, func(i, j int) bool { return idx[i] < idx[j] })
			buckets := make([]any, len(idx))
			for k, i := range idx {
				buckets[k] = []any{i, sec.buckets[i]}
			}
			rows = append(rows, []any{t, sec.count, sec.sumMs, buckets})
		}
		ops[op] = rows
	}
	return map[string]any{"gamma": seriesGamma, "relative_accuracy": seriesAccuracy, "ops": ops}
}

// perSecondSeries(): perSecond() of the run so far, or null when k6's own
// sink stayed (installLatencySink says when).
func (m *module) perSecondSeries(sobek.FunctionCall) sobek.Value {
	if installed == nil {
		return sobek.Null()
	}
	return m.rt.ToValue(installed.perSecond())
}
