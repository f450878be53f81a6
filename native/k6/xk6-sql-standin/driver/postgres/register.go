// Package postgres is k6/x/sql/driver/postgres over lib/pq, as
// github.com/grafana/xk6-sql-driver-postgres is.
package postgres

import (
	_ "github.com/lib/pq" // registers database/sql driver "postgres"

	"github.com/grafana/xk6-sql/sql"
)

func init() {
	sql.RegisterModule("postgres")
}
