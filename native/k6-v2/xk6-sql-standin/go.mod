// A stand-in for github.com/grafana/xk6-sql v1.2 on k6 v2, used only by
// the tests' k6 v2 build (native/k6-v2): xk6-sql v1.1 and later are the
// only releases for go.k6.io/k6/v2, and the Go module proxy here refuses
// every one of them. Every k6 v1 build in the tests links the real xk6-sql
// v1.0.5. See register.go for the v1.2.0 behaviours it keeps.
module github.com/grafana/xk6-sql

go 1.26
