// Package sql serves the JavaScript API of github.com/grafana/xk6-sql v1.2
// (k6/x/sql) to the tests' k6 v2 build (native/k6-v2), for which the Go
// module proxy here has no xk6-sql (see ../register.go). It takes the same
// path as xk6-sql: database/sql with a registered driver, rows scanned into
// `any` and handed to k6 as objects. It must stay neither faster nor
// friendlier than the real extension, so that a script that works here
// works in the compose k6 image; tests/k6/sql_api.js holds it to the same
// checks as the real v1.0.5.
package sql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/grafana/sobek"
	"go.k6.io/k6/v2/js/modules"
)

// ImportPath is the module's JavaScript import path, as in xk6-sql.
const ImportPath = "k6/x/sql"

// New returns the k6/x/sql module; the module's root package registers it.
func New() modules.Module { return new(rootModule) }

type rootModule struct{}

func (*rootModule) NewModuleInstance(vu modules.VU) modules.Instance {
	m := &module{vu: vu}
	m.exports.Default = m
	m.exports.Named = map[string]any{"open": m.Open}
	return m
}

type module struct {
	vu      modules.VU
	exports modules.Exports
}

func (m *module) Exports() modules.Exports { return m.exports }

var errUnsupportedDatabase = errors.New("unsupported database")

// Open opens a pool for a driver id exported by a k6/x/sql/driver/* module.
// opts, the optional third argument, is applied as xk6-sql applies it: each
// option named in it is set, whatever its value (max_idle_conns: 0 keeps no
// idle connection, so every statement opens one; conn_max_lifetime:
// undefined is the duration "undefined", an error).
func (m *module) Open(driverID sobek.Value, dsn string, opts sobek.Value) (*Database, error) {
	sym, ok := driverID.(*sobek.Symbol)
	if !ok {
		return nil, fmt.Errorf("%w: invalid driver parameter type", errUnsupportedDatabase)
	}
	name, found := lookupDriver(sym)
	if !found {
		return nil, fmt.Errorf("%w: %s", errUnsupportedDatabase, sym.String())
	}
	db, err := sql.Open(name, dsn)
	if err != nil {
		return nil, err
	}
	if opts != nil && !sobek.IsUndefined(opts) && !sobek.IsNull(opts) {
		if err := applyOptions(db, opts.ToObject(m.vu.Runtime())); err != nil {
			_ = db.Close()
			return nil, err
		}
	}
	return &Database{db: db, vu: m.vu}, nil
}

func applyOptions(db *sql.DB, o *sobek.Object) error {
	for _, opt := range []struct {
		key string
		set func(time.Duration)
	}{{"conn_max_idle_time", db.SetConnMaxIdleTime}, {"conn_max_lifetime", db.SetConnMaxLifetime}} {
		if v := o.Get(opt.key); v != nil {
			d, err := time.ParseDuration(v.String())
			if err != nil {
				return err
			}
			opt.set(d)
		}
	}
	if v := o.Get("max_idle_conns"); v != nil {
		db.SetMaxIdleConns(int(v.ToInteger()))
	}
	if v := o.Get("max_open_conns"); v != nil {
		db.SetMaxOpenConns(int(v.ToInteger()))
	}
	return nil
}

// KeyValue is one result row, keyed by column name.
type KeyValue map[string]any

// Database is a pool of connections, as xk6-sql's Database. Statements run
// under the VU's context, as in xk6-sql: a statement still running when k6
// stops the VU (gracefulStop) is cancelled.
type Database struct {
	db *sql.DB
	vu modules.VU
}

func (d *Database) ctx() context.Context {
	if c := d.vu.Context(); c != nil {
		return c
	}
	return context.Background()
}

func (d *Database) Query(query string, args ...any) ([]KeyValue, error) {
	return d.query(d.ctx(), query, args...)
}

func (d *Database) QueryWithTimeout(timeout string, query string, args ...any) ([]KeyValue, error) {
	ctx, cancel, err := withTimeout(d.ctx(), timeout)
	if err != nil {
		return nil, err
	}
	defer cancel()
	return d.query(ctx, query, args...)
}

func (d *Database) Exec(query string, args ...any) (sql.Result, error) {
	return d.db.ExecContext(d.ctx(), query, args...)
}

func (d *Database) ExecWithTimeout(timeout string, query string, args ...any) (sql.Result, error) {
	ctx, cancel, err := withTimeout(d.ctx(), timeout)
	if err != nil {
		return nil, err
	}
	defer cancel()
	return d.db.ExecContext(ctx, query, args...)
}

func (d *Database) Close() error { return d.db.Close() }

func withTimeout(parent context.Context, timeout string) (context.Context, context.CancelFunc, error) {
	d, err := time.ParseDuration(timeout)
	if err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithTimeout(parent, d)
	return ctx, cancel, nil
}

func (d *Database) query(ctx context.Context, query string, args ...any) ([]KeyValue, error) {
	rows, err := d.db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer func() { _ = rows.Close() }()

	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	values := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	result := make([]KeyValue, 0)
	for rows.Next() {
		for i := range values {
			ptrs[i] = &values[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		row := make(KeyValue, len(cols))
		for i, name := range cols {
			row[name] = values[i]
		}
		result = append(result, row)
	}
	// As xk6-sql (checked on v1.0.6 and v1.2.0): rows.Err() is not looked
	// at, so an error after the first rows (a read restart, a node dying
	// mid-result) returns the rows read so far and no exception. An error
	// before the first row still throws: both drivers report it from
	// QueryContext.
	return result, nil
}
