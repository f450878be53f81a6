//go:build ybbench_k6v1

// What the inner loop (innerloop.go) uses of k6 v1.s metrics and VU state;
// added to the module by native/build.sh (overlay), as k6v1.go.
package ybbench

import (
	"go.k6.io/k6/lib"
	"go.k6.io/k6/metrics"
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
