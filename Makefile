# make test   install what the tests need, build the native stack, run pytest
# make build  only build the native stack's Go binaries (cached outside the repo)
# make bench  client CPU per operation: k6 (lib/pq, pgx) next to pgbench

.PHONY: test deps build bench

test: deps build
	python3 -m pytest -q tests

deps:
	./native/install-deps.sh

build:
	./native/build.sh >/dev/null

bench: deps build
	python3 -m pip install -q -e '.[bench]'
	python3 -m bench.client_efficiency
