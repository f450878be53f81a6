"""How Prometheus reaches a secured cluster's endpoints: a scheme, a CA
file and credentials, per kind (YugabyteDB's web ports, node_exporter).

Target files (file_sd) carry addresses and labels only; a scheme, TLS and
credentials belong to a scrape config. So `ybbench targets` writes the
secured kinds as scrape configs of their own, in secured.scrape.yml next
to the target files, which prometheus/prometheus.yml includes
(scrape_config_files). Each keeps its job's name as the `job` label
(relabelled), so dashboards, rules and doctor read it as the plain job; the
YugabyteDB one repeats prometheus.yml's own relabelling, read from there.

Credentials are files Prometheus reads (password_file, credentials_file),
never a value in the config: under compose, the `secrets` service copies
YBBENCH_YB_SCRAPE_SECRET_FILE and YBBENCH_NODE_SCRAPE_SECRET_FILE for
Prometheus' user to SECRETS_DIR (compose/external.yaml)."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

import yaml

from ybbench.core.catalog import REPO
from ybbench.core.errors import UserError
from ybbench.core.files import write_file

SCRAPE_FILE = "secured.scrape.yml"
CONFIG = REPO / "prometheus" / "prometheus.yml"
# Where compose puts the secrets for Prometheus (compose/external.yaml).
SECRETS_DIR = "/run/secrets/ybbench"
# kind -> (the job in prometheus.yml, the knob whose file compose copies, its name in SECRETS_DIR)
KINDS = {
    "yb": ("yugabytedb", "YBBENCH_YB_SCRAPE_SECRET_FILE", "scrape_yugabytedb"),
    "node": ("node", "YBBENCH_NODE_SCRAPE_SECRET_FILE", "scrape_node"),
}
PEM_CERTIFICATE = b"-----BEGIN CERTIFICATE-----"
LABELS = {k: f"__ybbench_{k}" for k in ("ca_file", "basic_auth", "secret_file", "bearer")}


@dataclass
class Access:
    kind: str  # a key of KINDS
    scheme: str = "http"
    ca_file: str = ""  # a CA (PEM) to check the endpoints' certificates with; copied next to the targets
    basic_user: str = ""  # basic auth as this user, the password in secret_file
    bearer: bool = False  # a bearer token, in secret_file
    secret_file: str = ""  # as Prometheus sees it; default SECRETS_DIR/<name>

    @property
    def job(self) -> str:
        return KINDS[self.kind][0]

    def plain(self) -> bool:
        return self.scheme == "http" and not self.ca_file and not self.basic_user and not self.bearer

    def check(self) -> None:
        flag = f"--{self.kind}"
        if self.basic_user and self.bearer:
            raise UserError(f"{flag}-basic-auth and {flag}-bearer-token: give one way to authenticate")
        if self.ca_file and self.scheme != "https":
            raise UserError(f"{flag}-ca-file {self.ca_file} with {flag}-scheme {self.scheme}: a CA file is used "
                            f"only over HTTPS; add {flag}-scheme https")
        if self.ca_file:
            try:
                head = Path(self.ca_file).read_bytes()
            except OSError as e:
                raise UserError(f"{flag}-ca-file {self.ca_file}: cannot read it ({e.strerror})") from None
            if PEM_CERTIFICATE not in head:
                raise UserError(f"{flag}-ca-file {self.ca_file}: no PEM certificate in it (expected a "
                                f"'{PEM_CERTIFICATE.decode()}' block: the CA that signed the endpoints' certificates)")
        if self.secret_file and not (self.basic_user or self.bearer):
            raise UserError(f"{flag}-secret-file without {flag}-basic-auth USER or {flag}-bearer-token: say what "
                            "the file holds")

    def copied_ca(self) -> str:
        return f"{self.job}-ca.crt"

    def scrape_config(self, groups: list[dict]) -> dict:
        """The job's scrape config, as prometheus.yml's job with this access."""
        base = next((c for c in yaml.safe_load(CONFIG.read_text())["scrape_configs"] if c["job_name"] == self.job))
        out = {"job_name": f"{self.job}-secured", "scheme": self.scheme}
        if "metrics_path" in base:
            out["metrics_path"] = base["metrics_path"]
        if self.ca_file:
            # Relative: Prometheus resolves it against this file's folder, wherever that is mounted.
            out["tls_config"] = {"ca_file": self.copied_ca()}
        secret = self.secret_file or f"{SECRETS_DIR}/{KINDS[self.kind][2]}"
        if self.basic_user:
            out["basic_auth"] = {"username": self.basic_user, "password_file": secret}
        elif self.bearer:
            out["authorization"] = {"type": "Bearer", "credentials_file": secret}
        # Prometheus' API shows no included scrape config; hidden labels (dropped from the series, kept in
        # the targets API's discoveredLabels) tell doctor how each target is reached (doctor/scrape_errors.py).
        said = {LABELS["ca_file"]: out.get("tls_config", {}).get("ca_file", ""),
                LABELS["basic_auth"]: self.basic_user, LABELS["secret_file"]: secret if self.basic_user or self.bearer else "",
                LABELS["bearer"]: "true" if self.bearer else ""}
        out["static_configs"] = [{**g, "labels": {**g.get("labels", {}), **{k: v for k, v in said.items() if v}}}
                                 for g in groups]
        # The plain job's name, as every reader of the series expects it.
        out["relabel_configs"] = [{"target_label": "job", "replacement": self.job}]
        if "metric_relabel_configs" in base:
            out["metric_relabel_configs"] = base["metric_relabel_configs"]
        return out


def write(out: Path, secured: list[tuple[Access, list[dict]]]) -> list[Path]:
    """secured.scrape.yml and the CA copies for the secured kinds; with
    none, an earlier run's are removed (the plain target files hold all)."""
    path = out / SCRAPE_FILE
    for kind in KINDS:
        (out / Access(kind).copied_ca()).unlink(missing_ok=True)
    if not secured:
        path.unlink(missing_ok=True)
        return []
    written = []
    for access, _ in secured:
        if access.ca_file:
            shutil.copyfile(access.ca_file, out / access.copied_ca())
            (out / access.copied_ca()).chmod(0o644)  # a CA certificate is public; Prometheus' user reads it
            written.append(out / access.copied_ca())
    doc = {"scrape_configs": [a.scrape_config(groups) for a, groups in secured]}
    header = ("# Written by `ybbench targets`: the cluster's endpoints that need a scheme, a CA or credentials\n"
              "# (prometheus/prometheus.yml includes it; ybbench/run/scrape_access.py says why).\n")
    write_file(path, header + yaml.safe_dump(doc, sort_keys=False))
    return [path, *written]
