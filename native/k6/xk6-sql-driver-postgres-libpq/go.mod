// Our stand-in for github.com/grafana/xk6-sql-driver-postgres, which the Go
// module proxy here refuses at every version: see register.go.
module github.com/ybbench/xk6-sql-driver-postgres-libpq

go 1.23.0

require (
	github.com/grafana/xk6-sql v1.0.5
	github.com/lib/pq v1.12.3
)
