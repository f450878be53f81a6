// A stand-in for github.com/grafana/xk6-sql, which the Go module proxy here
// does not serve. The offline test k6 replaces xk6-sql with this folder, so
// that driver modules written against xk6-sql (ours for pgx, in
// compose/k6/xk6-sql-driver-pgx) compile unchanged in both builds.
module github.com/grafana/xk6-sql

go 1.26
