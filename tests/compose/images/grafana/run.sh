#!/bin/sh
# The stand-in's /run.sh (upstream's reads GF_*__FILE and starts
# grafana-server; grafana_standin.py reads GF_*__FILE itself).
exec python3 /usr/share/grafana/bin/grafana_standin.py "$@"
