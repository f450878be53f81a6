//go:build !ybbench_k6v1

// The k6 this module builds into: k6 v2 (the compose image, built by xk6);
// the tag ybbench_k6v1 builds it into k6 v1 instead (k6v1.go: the native
// test stack's k6 v1.8.1). The two APIs used here are the same.
package ybbench

import (
	"go.k6.io/k6/v2/js/modules"
	"go.k6.io/k6/v2/metrics"
)

type (
	vu       = modules.VU
	exports  = modules.Exports
	instance = modules.Instance
	sample   = metrics.Sample
	sink     = metrics.Sink
)

const iterationDuration = metrics.IterationDurationName

var register = modules.Register
