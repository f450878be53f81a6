"""The history's series: runs that differ only in the data they ran on
(their load's key prefix, a TPC-C load's tables and NURand constant) are
one series; a knob that changes how a run ran starts another."""

from ybbench.core.history_record import series_key


def test_tpcc_runs_on_two_loads_are_one_series_and_warehouses_split_them():
    a = {"WAREHOUSES": "10", "TPCC_MODE": "spec", "TABLE_PREFIX": "tpcc_0a1b2c3d4e5f_", "C_LOAD": "157"}
    b = {**a, "TABLE_PREFIX": "tpcc_99887766aabb_", "C_LOAD": "42"}
    assert series_key("tpcc", a) == series_key("tpcc", b)
    assert series_key("tpcc", a) != series_key("tpcc", {**a, "WAREHOUSES": "20"})
    assert series_key("tpcc", a) != series_key("tpcc", {**a, "TPCC_MODE": "throughput"})


def test_reads_of_two_loads_are_one_series_but_not_another_workloads():
    a = {"KEY_PREFIX": "rp1-insert", "MAX_WRITTEN_KEY": "1000", "VUS": "8"}
    b = {"KEY_PREFIX": "rp2-insert", "MAX_WRITTEN_KEY": "2200", "VUS": "8"}
    assert series_key("sql-selects", a) == series_key("sql-selects", b)
    assert series_key("sql-selects", a) != series_key("sql-updates", a)
    assert series_key("sql-selects", a) != series_key("sql-selects", {**a, "VUS": "16"})
