// Package sql registers k6/x/sql, as the root package of xk6-sql does.
//
// This is a stand-in for github.com/grafana/xk6-sql v1.2.0 on k6 v2, kept
// only for the tests' k6 v2.0.0 build (native/k6-v2): v1.1 and later are
// the only xk6-sql releases for go.k6.io/k6/v2 (the compose image's k6) and
// the Go module proxy here refuses them, so without it the scripts and our
// two modules could not be linked and run on k6 v2 here. The tests' k6
// v1.8.1 and v1.1.0 builds run the real xk6-sql v1.0.5 instead.
//
// The v1.2.0 behaviours it keeps, as read in v1.2.0 and as the tests check
// (tests/k6/sql_api.js, run on this build and on the real v1.0.5):
//   - query() does not check rows.Err() after its row loop: an error after
//     the first rows returns the rows read so far (v1.0.5 likewise);
//   - statements run under the VU's context, cancelled when k6 stops the
//     VU (v1.0.5 likewise);
//   - open() applies each option it is given, whatever its value
//     (max_idle_conns: 0; conn_max_lifetime: undefined fails).
//
// The API is sql.RegisterModule, which our driver modules call
// (compose/k6/xk6-sql-driver-pgx, native/k6/xk6-sql-driver-postgres-libpq).
package sql

import (
	"go.k6.io/k6/v2/js/modules"

	"github.com/grafana/xk6-sql/sql"
)

func init() {
	modules.Register(sql.ImportPath, sql.New())
}
