"""`ybbench doctor`: on the live stack or an external cluster, every fact
ybbench's runs, dashboards and reports rely on, one check per line (ok,
warn, fail, skipped with the reason), each saying what was expected, what
was found and what to do. A room of its own beside run/ (docs/layout.md)."""
