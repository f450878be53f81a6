// Package sql serves the JavaScript API of github.com/grafana/xk6-sql
// (k6/x/sql) to the k6 that the tests build offline, where xk6 and xk6-sql
// cannot be fetched. It takes the same path as xk6-sql: database/sql with a
// registered driver, rows scanned into `any` and handed to k6 as objects.
// It must stay neither faster nor friendlier than the real extension, so
// that a script that works here works in the compose k6 image.
package sql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/grafana/sobek"
	"go.k6.io/k6/js/modules"
)

// ImportPath is the module's JavaScript import path, as in xk6-sql.
const ImportPath = "k6/x/sql"

// New returns the k6/x/sql module; the module's root package registers it.
func New() modules.Module { return new(rootModule) }

type rootModule struct{}

func (*rootModule) NewModuleInstance(_ modules.VU) modules.Instance {
	m := &module{}
	m.exports.Default = m
	m.exports.Named = map[string]any{"open": m.Open}
	return m
}

type module struct {
	exports modules.Exports
}

func (m *module) Exports() modules.Exports { return m.exports }

// options are the optional third argument of open(), named as in xk6-sql.
type options struct {
	ConnMaxIdleTime string `js:"conn_max_idle_time"`
	ConnMaxLifetime string `js:"conn_max_lifetime"`
	MaxIdleConns    int    `js:"max_idle_conns"`
	MaxOpenConns    int    `js:"max_open_conns"`
}

var errUnsupportedDatabase = errors.New("unsupported database")

// Open opens a pool for a driver id exported by a k6/x/sql/driver/* module.
func (m *module) Open(driverID sobek.Value, dsn string, opts *options) (*Database, error) {
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
	if opts != nil {
		if err := applyOptions(db, opts); err != nil {
			_ = db.Close()
			return nil, err
		}
	}
	return &Database{db: db}, nil
}

func applyOptions(db *sql.DB, o *options) error {
	if o.ConnMaxIdleTime != "" {
		d, err := time.ParseDuration(o.ConnMaxIdleTime)
		if err != nil {
			return err
		}
		db.SetConnMaxIdleTime(d)
	}
	if o.ConnMaxLifetime != "" {
		d, err := time.ParseDuration(o.ConnMaxLifetime)
		if err != nil {
			return err
		}
		db.SetConnMaxLifetime(d)
	}
	if o.MaxIdleConns != 0 {
		db.SetMaxIdleConns(o.MaxIdleConns)
	}
	if o.MaxOpenConns != 0 {
		db.SetMaxOpenConns(o.MaxOpenConns)
	}
	return nil
}

// KeyValue is one result row, keyed by column name.
type KeyValue map[string]any

// Database is a pool of connections, as xk6-sql's Database.
type Database struct {
	db *sql.DB
}

func (d *Database) Query(query string, args ...any) ([]KeyValue, error) {
	return d.query(context.Background(), query, args...)
}

func (d *Database) QueryWithTimeout(timeout string, query string, args ...any) ([]KeyValue, error) {
	ctx, cancel, err := withTimeout(timeout)
	if err != nil {
		return nil, err
	}
	defer cancel()
	return d.query(ctx, query, args...)
}

func (d *Database) Exec(query string, args ...any) (sql.Result, error) {
	return d.db.ExecContext(context.Background(), query, args...)
}

func (d *Database) ExecWithTimeout(timeout string, query string, args ...any) (sql.Result, error) {
	ctx, cancel, err := withTimeout(timeout)
	if err != nil {
		return nil, err
	}
	defer cancel()
	return d.db.ExecContext(ctx, query, args...)
}

func (d *Database) Close() error { return d.db.Close() }

func withTimeout(timeout string) (context.Context, context.CancelFunc, error) {
	d, err := time.ParseDuration(timeout)
	if err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), d)
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
	return result, rows.Err()
}
