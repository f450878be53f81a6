//go:build ybbench_k6v1

// Our Go helpers module (compose/k6/xk6-ybbench) on k6 v1, the tests' k6
// v1.8.1: native/build.sh adds this file to that package with go build
// -overlay and the tag ybbench_k6v1 (which leaves out its k6v2.go). It lives
// here, not in the module's folder, because xk6 runs `go mod tidy`, which
// reads files of every build tag: an import of go.k6.io/k6 there put k6 v1
// into the compose image's k6 v2 build ("conflicting k6 versions detected").
// The two k6 APIs used are the same.
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
