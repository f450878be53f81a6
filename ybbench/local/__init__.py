"""Throwaway local servers and the demo: a local PostgreSQL 15
(pglocal.py, the demo's and the tests'), a local Prometheus and
node_exporter (promlocal.py), and `ybbench demo` (demo.py), which runs on
them and writes a report. Above report/, below cli.py."""
