// Command k6-official is the tests' k6 with only the extensions Grafana
// Cloud k6 offers for SQL (the real xk6-sql v1.0.5 and a lib/pq driver
// registration, no pgx, no Go helpers module): the tests run every workload on
// it, as a cloud run or a plain xk6 build would.
package main

import (
	k6cmd "go.k6.io/k6/cmd"

	_ "github.com/grafana/xk6-sql"
	_ "github.com/ybbench/xk6-sql-driver-postgres-libpq"
)

func main() {
	k6cmd.Execute()
}
