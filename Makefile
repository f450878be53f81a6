# make test   install what the tests need, build the native stack, run pytest
# make demo   make deps and make build first (apt and pip installs, every Go build of native/: long when cold),
#             then a short run on a throwaway local PostgreSQL 15 and its HTML report
# make build  only build the native stack's Go binaries (cached outside the repo)
# make bench  client CPU per operation, pinned and shared: k6 (lib/pq, pgx, pgx + Go helpers, pgconn, the inner loop) next to pgbench, sysbench and go-ycsb, sizing, k6 memory over 10 min; TPC-C's client cost (both styles: CPU, round trips the server counts, New-Order latency) and spec mode's memory (~100 min on 2 cores)
# make bench-monitoring  a real Prometheus scraping 100 nodes replayed from YugabyteDB captures (MINUTES=3)
# make soak   a fixed-rate insert + read/update mix for MINUTES (60): k6 and Prometheus memory, ops/s, p99 drift, verify
#             (INSERT_RATE=200 UPDATE_RATE=300 operations per second)

.PHONY: test demo deps build bench bench-monitoring soak

# The native stack's core is built first, beside the installs (apt, pip:
# downloads, little CPU). The rest (Loki, Promtail, the Compose plugin, k6
# v1.1.0 and v1.0.0: most of a cold build's CPU) and the compose stand-ins'
# Debian base (debootstrap, which the installs bring) are made in the
# background on idle CPU only (SCHED_IDLE) while the tests that need none of
# them run; the compose tests run beside the native ones once their part is
# built (tests/lanes.sh says how).
# TESTS: what pytest runs (all of tests/ unless given).
TESTS ?= tests
test:
	@./native/install-deps.sh & deps=$$!; \
	  ./native/build.sh core >/dev/null; built=$$?; wait $$deps; installed=$$?; \
	  [ $$built -eq 0 ] && [ $$installed -eq 0 ]
	@./tests/lanes.sh $(TESTS)

demo: deps build
	python3 -m ybbench demo

deps:
	./native/install-deps.sh

build:
	./native/build.sh >/dev/null

bench: deps build
	YBBENCH_BENCH=1 ./native/build.sh
	python3 -m pip install -q -e '.[bench]'
	python3 -m bench.client_efficiency
	python3 -m bench.tpcc_client_cost
	python3 -m bench.tpcc_spec_memory

bench-monitoring: deps build
	python3 -m pip install -q -e '.[bench]'
	python3 -m bench.monitoring_100_nodes --minutes $(or $(MINUTES),3) --no-drop-reference

soak: deps build
	python3 -m pip install -q -e '.[bench]'
	python3 -m bench.soak --minutes $(or $(MINUTES),60) --insert-rate $(or $(INSERT_RATE),200) \
		--update-rate $(or $(UPDATE_RATE),300)
