"""Why Prometheus cannot scrape a target, in the terms of the setting to
change: Prometheus' lastError names neither the flag that chose the scheme,
the CA file nor the credentials. A plain-HTTP scrape of an HTTPS endpoint
gets no clear words at all (a 400, an EOF, a reset): doctor then opens a
TLS handshake to the target itself, and says it serves HTTPS when it does."""

from __future__ import annotations

import re
import socket
import ssl
from urllib.parse import urlsplit

from ybbench.run.scrape_access import KINDS, LABELS

# The job -> the prefix of `ybbench targets`' flags for its endpoints.
FLAG = {job: f"--{kind}" for kind, (job, _, _) in KINDS.items()}
SECRET = {job: knob for kind, (job, knob, _) in KINDS.items()}
HANDSHAKE_S = 3.0


def speaks_tls(host: str, port: int) -> bool:
    """Whether a TLS handshake with host:port completes (its certificate not checked: only the protocol)."""
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    try:
        with socket.create_connection((host, port), timeout=HANDSHAKE_S) as s, ctx.wrap_socket(s):
            return True
    except (OSError, ssl.SSLError):
        return False


def explain(target: dict, probe=speaks_tls) -> tuple[str, str] | None:
    """(what is wrong, what to do) for a down target, or None when its
    error is none of the access faults (unreachable, a crash: the generic
    advice then)."""
    job = target["labels"].get("job", "")
    flag, secret = FLAG.get(job, "--yb"), SECRET.get(job, "its secret file")
    url = urlsplit(target["scrapeUrl"])
    where = f"{url.hostname}:{url.port}"
    error = target.get("lastError") or ""
    # How `ybbench targets` said to reach it (run/scrape_access.py); none of these for a plain target file's.
    said = {k: (target.get("discoveredLabels") or {}).get(label, "") for k, label in LABELS.items()}
    ca = said["ca_file"]
    if url.scheme == "http" and not re.search(r"refused|no such host|timeout|deadline", error) and \
            url.port and probe(url.hostname, url.port):
        return (f"{where} serves HTTPS; Prometheus scrapes it over plain HTTP ({error})",
                f"write the target files with `ybbench targets ... {flag}-scheme https {flag}-ca-file FILE` "
                "(FILE: the CA that signed its certificate)")
    if "server gave HTTP response to HTTPS client" in error:
        return (f"{where} serves plain HTTP; Prometheus scrapes it over HTTPS",
                f"write the target files without {flag}-scheme https")
    if "certificate signed by unknown authority" in error:
        return (f"{where}'s certificate is not signed by the CA Prometheus checks it with ({ca or 'the system CAs'}): "
                f"{error}", f"give `ybbench targets` the CA that signed it: {flag}-ca-file FILE")
    m = re.search(r"certificate is valid for ([^,]+(?:, [^,]+)*), not (\S+)|cannot validate certificate for (\S+) "
                  r"because it doesn't contain any IP SANs", error)
    if m:
        return (f"{where}'s certificate does not name the host Prometheus scrapes it by: {error}",
                "give `ybbench targets` the endpoints by a name their certificates hold (with "
                f"{flag}-ca-file checking them)")
    if "401" in error or "403" in error:
        if said["basic_auth"] or said["bearer"]:
            how = f"as {said['basic_auth']!r} with the password" if said["basic_auth"] else "with the bearer token"
            return (f"{where} refused Prometheus' credentials ({how} in {said['secret_file']}): {error}",
                    f"check the file {secret} names (compose copies it for Prometheus at `up`: run "
                    f"`docker compose up -d --force-recreate secrets prometheus` after changing it) and "
                    f"{flag}-basic-auth USER")
        return (f"{where} asks for credentials; Prometheus sends none: {error}",
                f"`ybbench targets ... {flag}-basic-auth USER` (or {flag}-bearer-token), the secret in the file "
                f"{secret} names")
    return None
