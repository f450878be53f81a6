// Command k6 is k6 v1.8.1 with an offline stand-in for xk6-sql and the
// PostgreSQL drivers the scripts use, assembled the way xk6 assembles an
// extended k6 (a main package importing the extensions).
package main

import (
	k6cmd "go.k6.io/k6/cmd"

	_ "github.com/grafana/xk6-sql"
	_ "github.com/grafana/xk6-sql/driver/postgres"
	_ "github.com/ybbench/xk6-sql-driver-pgx"
	_ "github.com/ybbench/xk6-ybbench"
)

func main() {
	k6cmd.Execute()
}
