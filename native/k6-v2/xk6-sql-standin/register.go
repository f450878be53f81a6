// Package sql registers k6/x/sql, as the root package of xk6-sql does.
//
// This is a stand-in for github.com/grafana/xk6-sql v1.2 on k6 v2, kept
// only for the tests' k6 v2.2.0 build (native/k6-v2): v1.1 and later are
// the only xk6-sql releases for go.k6.io/k6/v2 (the compose image's k6) and
// the Go module proxy here refuses them, so without it the scripts and our
// two modules could not be linked and run on k6 v2 here. The tests' k6
// v1.8.1 and v1.1.0 builds run the real xk6-sql v1.0.5 instead.
//
// v1.2.0's Go code is v1.0.5's with k6 v2's import path (git diff v1.0.5
// v1.2.0 of grafana/xk6-sql), and v1.2.1 (compose/.env) changes only
// interface{} to any and dependency versions, so this stand-in, written here from that
// API, is held to the checks the real v1.0.5 passes (tests/k6/sql_api.js,
// sql_context.js, run on both): query() does not check rows.Err() after its
// row loop (an error after the first rows returns the rows read so far);
// statements run under the VU's context, cancelled when k6 stops the VU;
// open() applies each option it is given, whatever its value
// (max_idle_conns: 0; conn_max_lifetime: undefined fails). Unlike the real
// one, open() takes the driver's Symbol only unboxed (the scripts unbox a
// require()d driver themselves: k6-scripts/lib/db.js).
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
