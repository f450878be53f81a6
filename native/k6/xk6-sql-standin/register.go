// Package sql registers k6/x/sql, as the root package of xk6-sql does.
package sql

import (
	"go.k6.io/k6/js/modules"

	"github.com/grafana/xk6-sql/sql"
)

func init() {
	modules.Register(sql.ImportPath, sql.New())
}
