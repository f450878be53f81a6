// Command k6-v1.1 is the oldest k6 the scripts claim: k6 v1.1.0, which is
// what the real xk6-sql v1.0.5 (Grafana Cloud k6's newest official
// release) and its postgres driver v0.1.x resolve to, with those two only
// (our lib/pq registration, native/k6/xk6-sql-driver-postgres-libpq,
// standing in for the driver, which the Go module proxy here refuses): no
// pgx, no Go helpers module. The tests run every workload on it, and check
// that DB_DRIVER=pgx, DB_DRIVER=pgconn and YBBENCH_GO_HELPERS=1 stop with the
// scripts' own message (tests/native/test_k6_matrix.py).
package main

import (
	k6cmd "go.k6.io/k6/cmd"

	_ "github.com/grafana/xk6-sql"
	_ "github.com/ybbench/xk6-sql-driver-postgres-libpq"
)

func main() {
	k6cmd.Execute()
}
