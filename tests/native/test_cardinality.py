"""The scrape config drops what no dashboard or rule reads (dashboard 12620
and ours are checked for data in their own tests): here, that it drops."""

from __future__ import annotations

from ..support.stack import wait_until


def test_relabeling_drops_unused_families_from_yugabytedb_targets(prometheus):
    def counts():
        scraped = prometheus.query('scrape_samples_scraped{job="yugabytedb", export_type="tserver_export"}')
        kept = prometheus.query('scrape_samples_post_metric_relabeling{job="yugabytedb", export_type="tserver_export"}')
        return (float(scraped[0]["value"][1]), float(kept[0]["value"][1])) if scraped and kept else None
    scraped, kept = wait_until(counts, "a scrape of the tserver capture", timeout=60)
    assert kept < 0.75 * scraped, (scraped, kept)
    for family in ("intentsdb_rocksdb_block_cache_hit", '{__name__=~"service_request_bytes_.+"}'):
        assert not prometheus.query(family), f"{family} should be dropped"
    # What the storage and cache dashboards read survives.
    assert prometheus.query('rocksdb_block_cache_hit{export_type="tserver_export"}')
