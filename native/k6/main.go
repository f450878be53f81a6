// Command k6 is the tests' k6: k6 v1.8.1 with the real xk6-sql v1.0.5, our
// lib/pq registration (k6/x/sql/driver/postgres, standing in for the
// official xk6-sql-driver-postgres), our pgx driver module and our Go
// helpers module, assembled the way xk6 assembles an extended k6 (a main package
// importing the extensions). native/build.sh builds it with the tag
// ybbench_k6v1 and adds _k6v1/k6v1.go to our Go helpers module (xk6-ybbench is
// written for k6 v2, the compose image's k6).
package main

import (
	k6cmd "go.k6.io/k6/cmd"

	_ "github.com/grafana/xk6-sql"
	_ "github.com/ybbench/xk6-sql-driver-pgx"
	_ "github.com/ybbench/xk6-sql-driver-postgres-libpq"
	_ "github.com/ybbench/xk6-ybbench"
)

func main() {
	k6cmd.Execute()
}
