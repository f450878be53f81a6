// Command k6-v2 is k6 v2.2.0 (go.k6.io/k6/v2, the compose image's k6) with
// our two modules (compose/k6/xk6-ybbench, compose/k6/xk6-sql-driver-pgx),
// our lib/pq registration (native/k6/xk6-sql-driver-postgres-libpq) and the
// xk6-sql v1.2 stand-in (./xk6-sql-standin: the real v1.2 is the only
// xk6-sql for k6 v2, and the Go module proxy here refuses it), assembled as
// xk6 assembles an extended k6. The tests link and run every workload on
// it; its module graph holds no k6 v1 (tests/native/test_k6_matrix.py).
package main

import (
	k6cmd "go.k6.io/k6/v2/cmd"

	_ "github.com/grafana/xk6-sql"
	_ "github.com/ybbench/xk6-sql-driver-pgx"
	_ "github.com/ybbench/xk6-sql-driver-postgres-libpq"
	_ "github.com/ybbench/xk6-ybbench"
)

func main() {
	k6cmd.Execute()
}
