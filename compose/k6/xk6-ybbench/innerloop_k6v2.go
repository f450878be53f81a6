//go:build !ybbench_k6v1

// What the inner loop (innerloop.go) uses of k6 v2's metrics and VU state;
// native/k6/_k6v1/innerloop_k6v1.go has the same names from k6 v1.
package ybbench

import (
	"go.k6.io/k6/v2/lib"
	"go.k6.io/k6/v2/metrics"
)

type (
	metricT    = metrics.Metric
	tagSet     = metrics.TagSet
	timeSeries = metrics.TimeSeries
	samples    = metrics.Samples
	vuState    = *lib.State
)

var (
	pushIfNotDone    = metrics.PushIfNotDone
	metricD          = metrics.D
	getScenarioState = lib.GetScenarioState
)
