// Package pgx is the xk6-sql driver module k6/x/sql/driver/pgx: pgx's
// database/sql driver (statement cache, one round trip, binary format),
// which costs about half of lib/pq's client CPU per statement.
package pgx

import (
	"github.com/grafana/xk6-sql/sql"
	_ "github.com/jackc/pgx/v5/stdlib" // registers database/sql driver "pgx"
)

func init() {
	sql.RegisterModule("pgx")
}
