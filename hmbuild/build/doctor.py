"""`hmbuild doctor` / `hmbuild targets`: what each target needs, what this machine has, and the
exact command that installs what is missing."""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass

from hmbuild.build.builder import ccache_launcher, conan_home, tool_env
from hmbuild.targets.node import arm64_node, napi_headers_dir
from hmbuild.build.runtime_package import configured_remotes
from hmbuild.targets.target import TARGET_NAMES, Target, resolve_target


@dataclass(frozen=True)
class ToolCheck:
    name: str
    found: str | None
    fix: str


def target_report(target: Target) -> dict:
    return {
        "name": target.name,
        "triple": target.triple,
        "description": target.description,
        "ready": not target.missing,
        "can_run_tests": target.can_run_tests,
        "runner": " ".join(target.runner) if target.runner else ("native" if target.runner == () else None),
        "cpus": list(target.cpus),
        "found": dict(target.found),
        "missing": [{"what": m.what, "fix": m.fix} for m in target.missing],
    }


def tool_checks() -> list[ToolCheck]:
    path = tool_env()["PATH"]
    checks = [ToolCheck(t, shutil.which(t, path=path), "pip install hmbuild") for t in ("conan", "cmake", "ninja")]
    checks.append(ToolCheck("npm", shutil.which("npm"), "apt-get install -y nodejs npm"))
    headers = napi_headers_dir(install=False)
    checks.append(ToolCheck("node-api-headers", str(headers) if headers else None, "hmbuild setup"))
    node = arm64_node(install=False)
    checks.append(ToolCheck("aarch64 Node.js", str(node) if node else None, "hmbuild setup"))
    return checks


def ccache_report() -> dict:
    """ccache is optional: without it builds work, only slower after a change."""
    found = shutil.which("ccache")
    return {"found": found, "used": ccache_launcher() is not None,
            "fix": None if found else "apt-get install -y ccache", "stats": _ccache_stats(found) if found else None}


def _ccache_stats(ccache: str) -> dict | None:
    # ccache 4 prints its counters one per line as name<TAB>value for scripts; older ones cannot.
    proc = subprocess.run([ccache, "--print-stats"], capture_output=True, text=True)
    if proc.returncode != 0:
        return None
    counters = dict(line.split("\t", 1) for line in proc.stdout.splitlines() if "\t" in line)
    hits = sum(int(counters.get(k, 0)) for k in ("direct_cache_hit", "preprocessed_cache_hit"))
    return {"hits": hits, "misses": int(counters.get("cache_miss", 0))}


def conan_report() -> dict:
    """hmbuild's Conan home and its remotes (`hmbuild build --remote NAME` takes one of them)."""
    home = conan_home()
    return {"home": str(home), "remotes": configured_remotes() if home.is_dir() else []}


def doctor() -> dict:
    targets = [target_report(resolve_target(name)) for name in TARGET_NAMES]
    tools = [{"name": c.name, "found": c.found, "fix": None if c.found else c.fix} for c in tool_checks()]
    return {"targets": targets, "tools": tools, "ccache": ccache_report(), "conan": conan_report(),
            "ready": all(t["ready"] for t in targets if not t["name"].startswith("ohos")) and all(t["found"] for t in tools)}
