"""A test's own CAs and certificates, made with the openssl command: a v3
CA (basicConstraints CA:TRUE, as Go's x509 wants of an issuer), server
leaves for the names a client must accept (subjectAltName only), client
leaves whose CN is a database role. EC P-256 keys, mode 600, two days."""

from __future__ import annotations

import subprocess
from pathlib import Path

CNF = """\
[req]
distinguished_name = dn
prompt = no
[dn]
CN = placeholder
[ca]
basicConstraints = critical, CA:TRUE
keyUsage = critical, keyCertSign, cRLSign
subjectKeyIdentifier = hash
[client]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature
extendedKeyUsage = clientAuth
authorityKeyIdentifier = keyid
"""
SERVER = """\
[server]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature, keyEncipherment
extendedKeyUsage = serverAuth
subjectAltName = {names}
authorityKeyIdentifier = keyid
"""


def openssl(*args: str, cwd: Path) -> None:
    p = subprocess.run(["openssl", *args], cwd=cwd, capture_output=True, text=True)
    assert p.returncode == 0, f"openssl {' '.join(args)}: {p.stderr}"


class Certs:
    """Files in one folder: NAME.crt and NAME.key for each CA and leaf."""

    def __init__(self, folder: Path):
        self.dir = folder
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "openssl.cnf").write_text(CNF)

    def _key_and_csr(self, name: str, cn: str) -> None:
        openssl("req", "-new", "-config", "openssl.cnf", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                "-nodes", "-keyout", f"{name}.key", "-out", f"{name}.csr", "-subj", f"/CN={cn}", cwd=self.dir)
        (self.dir / f"{name}.key").chmod(0o600)

    def ca(self, name: str) -> Path:
        openssl("req", "-x509", "-config", "openssl.cnf", "-extensions", "ca", "-newkey", "ec",
                "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", f"{name}.key", "-out", f"{name}.crt",
                "-days", "2", "-subj", f"/CN=ybbench test {name}", cwd=self.dir)
        (self.dir / f"{name}.key").chmod(0o600)
        return self.dir / f"{name}.crt"

    def _sign(self, name: str, ca: str, extensions: str, extfile: str) -> tuple[Path, Path]:
        openssl("x509", "-req", "-in", f"{name}.csr", "-CA", f"{ca}.crt", "-CAkey", f"{ca}.key", "-CAcreateserial",
                "-out", f"{name}.crt", "-days", "2", "-extfile", extfile, "-extensions", extensions, cwd=self.dir)
        return self.dir / f"{name}.crt", self.dir / f"{name}.key"

    def server(self, name: str, ca: str, dns: tuple[str, ...] = (), ips: tuple[str, ...] = ()) -> tuple[Path, Path]:
        """A server leaf valid for exactly these names and addresses."""
        names = ", ".join([*(f"DNS:{d}" for d in dns), *(f"IP:{i}" for i in ips)])
        (self.dir / f"{name}.ext").write_text(SERVER.format(names=names))
        self._key_and_csr(name, (dns or ips)[0])
        return self._sign(name, ca, "server", f"{name}.ext")

    def client(self, name: str, ca: str, cn: str) -> tuple[Path, Path]:
        """A client leaf whose CN is `cn` (a role, for clientcert=verify-full)."""
        self._key_and_csr(name, cn)
        return self._sign(name, ca, "client", "openssl.cnf")
