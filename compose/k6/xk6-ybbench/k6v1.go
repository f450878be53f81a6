//go:build ybbench_k6v1

// k6 v1 (the native test stack's k6 v1.8.1): see k6v2.go.
package ybbench

import (
	"go.k6.io/k6/js/modules"
	"go.k6.io/k6/metrics"
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
