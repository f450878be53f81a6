//go:build !ybbench_k6v1

// The k6 this module builds into: k6 v2 (the compose image, built by xk6;
// native/k6-v2 in the tests). The tests' k6 v1.8.1 (native/k6) builds it
// with the tag ybbench_k6v1, which leaves this file out, and adds
// native/k6/_k6v1/k6v1.go in its place; this module's go.mod requires no
// k6 v1, so xk6's k6 v2 build has none in its module graph. The two APIs
// used here are the same.
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
