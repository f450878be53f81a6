// Package postgres is a stand-in for github.com/grafana/xk6-sql-driver-postgres
// (the official k6/x/sql/driver/postgres, which the Go module proxy here
// refuses at every version), written here: like upstream, it is one
// sql.RegisterModule("postgres") over lib/pq's database/sql driver, so
// what the scripts get from it is lib/pq's behaviour under whichever
// xk6-sql the build links (the real v1.0.5 in native/k6 and native/k6-v1.1;
// the v1.2 stand-in in native/k6-v2).
package postgres

import (
	"github.com/grafana/xk6-sql/sql"
	_ "github.com/lib/pq" // registers database/sql driver "postgres"
)

func init() {
	sql.RegisterModule("postgres")
}
