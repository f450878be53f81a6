"""ybbench: observability-driven benchmarks for YugabyteDB and PostgreSQL-wire databases."""

__version__ = "0.1.0"
