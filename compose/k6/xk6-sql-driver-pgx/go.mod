module github.com/ybbench/xk6-sql-driver-pgx

go 1.25

require (
	github.com/grafana/xk6-sql v1.2.0
	github.com/jackc/pgx/v5 v5.12.0
)
