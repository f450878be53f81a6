package sql

import (
	"sync"

	"github.com/grafana/sobek"
	"go.k6.io/k6/v2/js/modules"
)

// Driver modules export a Symbol as their default; open() maps it back to
// the database/sql driver name, as xk6-sql does.
var (
	driversMu sync.RWMutex
	drivers   = map[*sobek.Symbol]string{}
)

const driverImportPathPrefix = "k6/x/sql/driver/"

// RegisterModule registers k6/x/sql/driver/<name> for a database/sql driver
// registered under the same name.
func RegisterModule(name string) modules.Module {
	id := sobek.NewSymbol(name)
	driversMu.Lock()
	drivers[id] = name
	driversMu.Unlock()
	root := &driverRoot{id: id}
	modules.Register(driverImportPathPrefix+name, root)
	return root
}

func lookupDriver(id *sobek.Symbol) (string, bool) {
	driversMu.RLock()
	defer driversMu.RUnlock()
	name, ok := drivers[id]
	return name, ok
}

type driverRoot struct{ id *sobek.Symbol }

func (r *driverRoot) NewModuleInstance(_ modules.VU) modules.Instance {
	return &driverInstance{exports: modules.Exports{Default: r.id}}
}

type driverInstance struct{ exports modules.Exports }

func (d *driverInstance) Exports() modules.Exports { return d.exports }
