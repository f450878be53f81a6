// Command k6-official is the test k6 with only the extensions Grafana Cloud
// k6 offers for SQL (xk6-sql and its lib/pq driver, no pgx): the tests run
// every workload on it, as a cloud run or a plain xk6 build would.
package main

import (
	k6cmd "go.k6.io/k6/cmd"

	_ "github.com/grafana/xk6-sql"
	_ "github.com/grafana/xk6-sql/driver/postgres"
)

func main() {
	k6cmd.Execute()
}
