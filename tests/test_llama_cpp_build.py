"""hm_llama_count: llama.cpp cross-built for aarch64 (hmbuild/build/llama_cpp.py) and run under qemu on
the test model, for instruction counts next to hmllm."""
import json
import subprocess

import pytest

from conftest import have_arm64_tools
from hmbuild.build.llama_cpp import arm_arch_for_cpu, build_llama_count
from hmbuild.errors import HmbuildError


def test_each_cpu_gets_the_march_of_its_features():
    for cpu in ("cortex-a76", "neoverse-n1", "cortex-x1", "cortex-a55"):
        assert arm_arch_for_cpu(cpu) == "armv8.2-a+dotprod+fp16"
    for cpu in ("cortex-a53", "cortex-a72"):
        assert arm_arch_for_cpu(cpu) == "armv8-a"
    assert arm_arch_for_cpu("max") == "armv8.6-a+dotprod+i8mm+fp16"
    with pytest.raises(HmbuildError, match="no-such-core"):
        arm_arch_for_cpu("no-such-core")


# Compiles llama.cpp for aarch64 on a fresh machine (about 4 minutes on 2 cores, plus a 46 s sdist
# download): run on demand with the side-by-side counts (`-m soak`), not in every CI run.
@pytest.mark.soak
@pytest.mark.qemu
@pytest.mark.skipif(not have_arm64_tools(), reason="needs g++-aarch64-linux-gnu and qemu-user")
def test_llama_cpp_counts_driver_generates_n_tokens_under_qemu():
    from hmbuild.model.catalog import fetch_model

    exe = build_llama_count(arm_arch_for_cpu("cortex-a76"))  # minutes the first time, then cached
    model = fetch_model()
    n_gen = 3
    proc = subprocess.run(["qemu-aarch64", "-cpu", "cortex-a76", str(exe), str(model), "2,651,1234", str(n_gen)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""  # llama.cpp's logging is silenced
    out = json.loads(proc.stdout)
    assert out["ok"] is True and len(out["tokens"]) == n_gen
    assert all(isinstance(t, int) and 0 <= t < 262144 for t in out["tokens"])

    bad = subprocess.run(["qemu-aarch64", "-cpu", "cortex-a76", str(exe), str(model), "2,x", "1"],
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 1 and bad.stdout == "" and len(bad.stderr.strip().splitlines()) == 1
