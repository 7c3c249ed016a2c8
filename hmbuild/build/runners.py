"""Running a built project's tests: native tests through ctest (aarch64 ones under qemu via
CMAKE_CROSSCOMPILING_EMULATOR) and NAPI tests (node:test) in a Node.js of the target's
architecture (aarch64 Node under qemu-aarch64 for linux-arm64).

Results are read from structured output only — ctest's JUnit file and node:test's TAP on
stdout — so whatever qemu prints on stderr cannot confuse the counts.
"""

from __future__ import annotations

import os
import re
import json
import subprocess
import sys
import threading
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from hmbuild.build.builder import BuildResult, tool_env, tool_path
from hmbuild.errors import HmbuildError, exit_reason
from hmbuild.targets.node import node_for
from hmbuild.config.project import Project
from hmbuild.config.settings import validate_intent
from hmbuild.targets.target import Target


@dataclass
class SuiteResult:
    name: str
    passed: int
    failed: int
    failures: list[str] = field(default_factory=list)


@dataclass
class TestReport:
    target: str
    cpu: str | None
    suites: list[SuiteResult]
    sanitize: str | None = None
    skipped: list[dict] = field(default_factory=list)  # {"suite", "reason"}: suites not run, and why

    @property
    def passed(self) -> int:
        return sum(s.passed for s in self.suites)

    @property
    def failed(self) -> int:
        return sum(s.failed for s in self.suites)

    def to_json(self) -> dict:
        return {
            "target": self.target,
            "cpu": self.cpu,
            "passed": self.passed,
            "failed": self.failed,
            "suites": [{"name": s.name, "passed": s.passed, "failed": s.failed, "failures": s.failures}
                       for s in self.suites],
            "sanitize": self.sanitize,
            "skipped": self.skipped,
        }


def qemu_cpus(target: Target) -> list[str]:
    """The CPU models this machine's qemu-aarch64 knows (`-cpu help`)."""
    try:
        out = subprocess.run([target.runner[0], "-cpu", "help"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return []
    return [line.split()[0] for line in out.splitlines()[1:] if line.strip()]


def check_cpu(target: Target, cpu: str | None) -> str | None:
    if cpu is None:
        return None
    if not target.emulated:
        raise HmbuildError(f"--cpu only applies to emulated targets (linux-arm64); {target.name} runs natively.")
    known = qemu_cpus(target)
    if known and cpu not in known:
        raise HmbuildError(f"qemu-aarch64 has no CPU '{cpu}'; try one of: {', '.join(target.cpus)}.")
    return cpu


def _test_env(target: Target, library: Path | None, cpu: str | None, model: Path | None = None,
              chat_model: Path | None = None) -> dict[str, str]:
    env = tool_env()
    if library:
        env["HMBUILD_LIBRARY"] = str(library)
        # tests/napi/service.test.mjs transpiles the project's ArkTS with it (pure JS: any Node).
        from hmbuild.build.arkts_lint import ohos_typescript_dir
        env["HMBUILD_OHOS_TYPESCRIPT"] = str(ohos_typescript_dir(install=True))
    env["HMBUILD_TARGET"] = target.name
    if model:
        # The real model for tests whose behaviour depends on text (native tests read HMLLM_*).
        env["HMBUILD_TEST_MODEL"] = env["HMLLM_TEST_MODEL"] = str(model)
        # The instruct model whose chats end by themselves, when the caller has it (`hmbuild
        # fetch-model smollm2-135m-instruct` caches it; its tests skip, saying so, otherwise).
        if chat_model is not None:
            env["HMBUILD_CHAT_TEST_MODEL"] = env["HMLLM_CHAT_TEST_MODEL"] = str(chat_model)
    if target.emulated:
        # qemu-user reads its CPU and library prefix from the environment, which also reaches
        # qemu processes that ctest starts.
        env.pop("QEMU_CPU", None)
        if cpu:
            env["QEMU_CPU"] = cpu
        if target.sysroot:
            env["QEMU_LD_PREFIX"] = str(target.sysroot)
    return env


_HARNESS_SUMMARY = re.compile(r"^# (\d+) passed, (\d+) failed$", re.M)
_HARNESS_FAIL = re.compile(r"^FAIL (\S+): (.*)$", re.M)


def _runtime_library(target: Target, name: str) -> str:
    out = subprocess.run([target.cxx or "g++", f"-print-file-name={name}"], capture_output=True, text=True).stdout.strip()
    if not out or out == name:
        raise HmbuildError(f"The compiler has no {name}; install it with: apt-get install -y g++")
    return out


# Tried with Node 20 and GCC 12: without a preload the TSan addon does not load ("libtsan.so.2:
# cannot allocate memory in static TLS block"); with libtsan preloaded it loads, but TSan reports
# races inside V8's platform threads (their synchronisation is not instrumented) before any test
# of ours, and the slowdown pushes requests past their timeouts. A TSan-built Node would be needed.
NAPI_UNDER_TSAN = ("the system Node.js is not built with ThreadSanitizer, so TSan reports races inside "
                   "Node itself; the cancel/release/timeout races are checked by the native hmllm.races test instead")


def sanitizer_env(target: Target, sanitize: str) -> dict[str, str]:
    """Options that make every report fail its test (a distinct exit code per sanitizer). Node.js
    is not built with ASan, so for address the runtime is preloaded for the addon to use it; leak
    checking is off because Node itself keeps allocations alive at exit."""
    env = {"UBSAN_OPTIONS": "print_stacktrace=1:halt_on_error=1:exitcode=87"}
    if sanitize in ("address", "address,undefined"):
        # ASan's runtime must come first; the addon's own libubsan (address,undefined) follows it.
        env["LD_PRELOAD"] = _runtime_library(target, "libasan.so")
        # A small quarantine (default 256 MB) keeps a use-after-free caught within the last 16 MB
        # freed while RSS keeps meaning something: the stress test's plateau check stays on.
        env["ASAN_OPTIONS"] = ("detect_leaks=0:abort_on_error=0:exitcode=86:quarantine_size_mb=16:"
                               "thread_local_quarantine_size_kb=256")
    elif sanitize == "undefined":
        # The addon links libubsan itself; preloading keeps its interceptors first in Node too.
        env["LD_PRELOAD"] = _runtime_library(target, "libubsan.so")
    elif sanitize == "thread":
        env["TSAN_OPTIONS"] = "halt_on_error=1:exitcode=88:second_deadlock_stack=1"
    return env


def parse_junit(path: Path) -> SuiteResult:
    """Counts ctest results. A test binary built on native/tests/test_main.h reports its own
    cases ("ok NAME" / "FAIL NAME: where" and a summary line); those are counted one by one."""
    root = ET.parse(path).getroot()
    suite = root if root.tag == "testsuite" else root.find("testsuite")
    passed = failed = 0
    failures = []
    for case in suite.iter("testcase"):
        status = case.get("status", "")
        name = case.get("name", "?")
        is_failed = case.find("failure") is not None or case.find("error") is not None or status == "fail"
        if not is_failed and (case.find("skipped") is not None or status in ("notrun", "disabled")):
            continue
        out = case.findtext("system-out") or ""
        summary = _HARNESS_SUMMARY.search(out)
        if summary:
            passed += int(summary.group(1))
            failed += int(summary.group(2))
            failures += [f"{name}: {m.group(1)} ({m.group(2)})" for m in _HARNESS_FAIL.finditer(out)]
            if is_failed and int(summary.group(2)) == 0:
                failed += 1  # the binary failed after its cases passed (e.g. crashed at exit)
                failures.append(f"{name} exited with an error")
        elif is_failed:
            failed += 1
            failures.append(name)
        else:
            passed += 1
    return SuiteResult("native (ctest)", passed, failed, failures)


_TAP_RESULT = re.compile(r"^(\s*)(not ok|ok) \d+ - (.*?)(\s+#\s*(SKIP|TODO).*)?$")


def parse_tap(name: str, stdout: str, returncode: int) -> SuiteResult:
    """Counts top-level test results of a node:test TAP stream."""
    passed = failed = 0
    failures = []
    for line in stdout.splitlines():
        m = _TAP_RESULT.match(line)
        if not m or m.group(1):  # indented lines are subtests, counted by their parent
            continue
        if m.group(5):
            continue
        if m.group(2) == "ok":
            passed += 1
        else:
            failed += 1
            failures.append(m.group(3))
    if returncode != 0 and failed == 0:
        # The process died (crash, signal, load failure) before reporting a failure itself.
        failed = 1
        failures.append(f"{name} ended before finishing: {exit_reason(returncode)}")
    return SuiteResult(name, passed, failed, failures)


def run_ctest(build: BuildResult, env: dict[str, str], verbose: bool = False,
              only: tuple[str, ...] = ()) -> SuiteResult:
    """The native suite (ctest); `only`: just the tests hmllm.<name> of these names."""
    junit = build.build_dir / "hmbuild-ctest.xml"
    junit.unlink(missing_ok=True)
    select = ["-R", "^hmllm\\.(" + "|".join(re.escape(n) for n in only) + ")$"] if only else []
    proc = subprocess.run([tool_path("ctest"), "--test-dir", str(build.build_dir), "--output-junit", str(junit),
                           "--output-on-failure", "--timeout", "1800", *select,
                           "--test-output-size-passed", "1048576", "--test-output-size-failed", "1048576"],
                          env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace")
    if proc.returncode != 0 or verbose:
        sys.stderr.write(proc.stdout)
    if not junit.exists():
        return SuiteResult("native (ctest)", 0, 1, [f"ctest did not run (exit {proc.returncode})"])
    return parse_junit(junit)


def run_node_tests(project: Project, target: Target, env: dict[str, str], verbose: bool = False) -> list[SuiteResult]:
    node = node_for(target)
    results = []
    for test_file in sorted((project.root / "tests" / "napi").glob("*.test.mjs")):
        # Each file runs in one process (no node:test child processes: qemu-user could not follow
        # an exec of another aarch64 binary without binfmt_misc).
        cmd = [*target.runner, str(node), "--test-reporter=tap", str(test_file)]
        print(f"hmbuild: node {test_file.relative_to(project.root)}", file=sys.stderr)
        proc = subprocess.run(cmd, env=env, cwd=project.root, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, errors="replace", timeout=3600)
        if proc.returncode != 0 or verbose:
            sys.stderr.write(proc.stdout)
            sys.stderr.write(proc.stderr)
        results.append(parse_tap(f"napi {test_file.name}", proc.stdout, proc.returncode))
    return results


def ensure_runnable(target: Target) -> None:
    if not target.can_run_tests:
        raise HmbuildError(
            f"{target.name} binaries cannot run on this machine (they need a HarmonyOS device or the DevEco "
            f"emulator); build it with `hmbuild build --target {target.name}` and test linux-arm64 here instead."
        )


def registration_suite(project: Project, target: Target, build: BuildResult, env: dict[str, str]) -> SuiteResult:
    """An OHOS module loaded the ArkTS way (dlopen; its constructor calls napi_module_register) by
    the loader double: it must register the project's name with the functions api.toml declares."""
    from hmbuild.build.ohos import registration_loader, runner_with_library_first
    from hmbuild.build.registration import registration
    from hmbuild.config.api_schema import NAPI_HEADERS, api_file_of, known_limits, known_symbols, load_api

    name = "registration (ArkTS loader double)"
    print(f"hmbuild: loading {build.library.name} the ArkTS way (registration loader double)", file=sys.stderr)
    try:
        loader = registration_loader(target, build.build_dir)
        got = registration(build.library, loader, runner=runner_with_library_first(target.runner, loader))
    except HmbuildError as err:
        return SuiteResult(name, 0, 1, [str(err)])
    napi = project.root / NAPI_HEADERS
    want = [f.name for f in load_api(project.root / api_file_of(project), known_symbols(napi),
                                     known_limits(napi)).functions]
    failures = []
    if got.modname != project.name:
        failures.append(f"registered module name {got.modname!r}, expected {project.name!r}")
    if sorted(got.functions) != sorted(want):
        failures.append(f"registered functions {', '.join(got.functions)}; api.toml declares {', '.join(want)}")
    if got.registrations != 1:
        failures.append(f"napi_module_register was called {got.registrations} times, expected once")
    return SuiteResult(name, 3 - len(failures), len(failures), failures)


def native_test_names(build: BuildResult) -> list[str]:
    """The names of the native tests in a build (hmllm.<name> in ctest), e.g. kernels, session."""
    proc = subprocess.run([tool_path("ctest"), "--test-dir", str(build.build_dir), "--show-only=json-v1"],
                          stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        tests = json.loads(proc.stdout)["tests"]
    except (ValueError, KeyError):
        return []
    return sorted(t["name"].removeprefix("hmllm.") for t in tests if t["name"].startswith("hmllm."))


def run_tests(project: Project, target: Target, build: BuildResult, cpu: str | None,
              verbose: bool = False, model: Path | None = None, only: tuple[str, ...] = (),
              chat_model: Path | None = None) -> TestReport:
    """The native suite, then the NAPI suites; `only`: just these native tests (the NAPI suites are
    then skipped, and say so)."""
    ensure_runnable(target)
    cpu = check_cpu(target, cpu)
    if only:
        known = native_test_names(build)
        unknown = [n for n in only if n not in known]
        if unknown:
            raise HmbuildError(f"--only {unknown[0]!r} is not a native test of this build; the tests are "
                               f"{', '.join(known) or 'none'}.")
    env = _test_env(target, build.library, cpu, model, chat_model)
    if build.sanitize:
        env.update(sanitizer_env(target, build.sanitize))
    print(f"hmbuild: ctest in {build.build_dir}" + (f" (qemu -cpu {cpu})" if cpu else ""), file=sys.stderr)
    suites = [run_ctest(build, env, verbose, only)]
    skipped = []
    if only:
        skipped.append({"suite": "napi", "reason": f"--only {','.join(only)} runs native tests alone"})
    elif target.conan_os == "OHOS":
        from hmbuild.build.ohos import NAPI_SKIP_REASON

        suites.append(registration_suite(project, target, build, env))
        skipped.append({"suite": "napi", "reason": NAPI_SKIP_REASON})
    elif build.sanitize == "thread":
        skipped.append({"suite": "napi", "reason": NAPI_UNDER_TSAN})
        print(f"hmbuild: NAPI suite skipped: {NAPI_UNDER_TSAN}", file=sys.stderr)
    else:
        suites += run_node_tests(project, target, env, verbose)
    return TestReport(target=target.name, cpu=cpu, suites=suites, sanitize=build.sanitize, skipped=skipped)


@dataclass(frozen=True)
class RunOptions:
    """What `hmbuild run` asks of hmllm_run; hmllm_run_args turns it into that tool's argv."""
    prompt: str | None = None
    tokens: str | None = None  # comma-separated token ids instead of a prompt
    max_tokens: int = 32
    threads: int = 0
    temperature: float = 0.0
    top_k: int = 40
    top_p: float = 0.95
    seed: int = 0
    ctx: int = 2048
    kv: str = "f16"
    kernels: str | None = None
    logits_out: Path | None = None
    labels: str | None = None  # comma-separated: route the prompt to one of them
    calibrate: bool | None = None  # None: hmbuild.toml [intent] calibrate
    chat: Path | None = None         # a conversation file ({"messages": [...]}) ...
    chat_format: Path | None = None  # ... in this compiled chat format (hmbuild-chat JSON)
    print_prompt: bool = False       # with chat: print the rendered prompt instead of generating
    timeout_ms: int | None = None    # with chat: stop generation after this long


def hmllm_run_args(project: Project, o: RunOptions) -> list[str]:
    """hmllm_run's arguments (without --model and --json) for the options, with hmbuild.toml's
    [[intent.example]] rows of the asked labels as --example when classifying."""
    kernels = ["--kernels", o.kernels] if o.kernels else []
    if o.labels is not None:
        wanted = [label.strip() for label in o.labels.split(",")]
        if not all(wanted):
            raise HmbuildError("--classify takes comma-separated non-empty labels, e.g. alarm,weather,music,note.")
        intent = validate_intent(project.settings.get("intent"), str(project.root / "hmbuild.toml"))
        rows = intent["examples"] if intent else []
        examples = [a for r in rows if r["label"] in wanted for a in ("--example", f"{r['label']}={r['text']}")]
        args = ["--prompt", o.prompt, "--classify", ",".join(wanted), "--threads", str(o.threads), "--kv", o.kv,
                "--ctx", str(o.ctx), *examples, *kernels]
        if project.setting("intent", "calibrate", o.calibrate, None, False) is True:
            args.append("--calibrate")
        return args
    if o.chat is not None:
        args = ["--chat", str(Path(o.chat).resolve())]
        # None: the model file carries the format (chat-template --embed); the session reads it there.
        args += ["--chat-format", str(Path(o.chat_format).resolve())] if o.chat_format is not None else []
        args += ["--print-prompt"] if o.print_prompt else []
        args += ["--timeout-ms", str(o.timeout_ms)] if o.timeout_ms else []
    else:
        args = ["--prompt", o.prompt] if o.prompt is not None else ["--tokens", o.tokens]
    args += ["--max-tokens", str(o.max_tokens), "--threads", str(o.threads), "--temperature", str(o.temperature),
             "--top-k", str(o.top_k), "--top-p", str(o.top_p), "--seed", str(o.seed), "--kv", o.kv,
             "--ctx", str(o.ctx), *kernels]
    if o.logits_out:
        args += ["--logits-out", str(Path(o.logits_out).resolve())]
    return args


def run_model(project: Project, target: Target, build: BuildResult, model: Path, options: RunOptions,
              cpu: str | None, json_output: bool) -> tuple[int, str]:
    """Runs the project's hmllm_run tool on the target (under qemu for linux-arm64). Without JSON
    the generated text streams straight to our stdout; with JSON its one object is returned."""
    ensure_runnable(target)
    cpu = check_cpu(target, cpu)
    tool = build.build_dir / "hmllm" / "hmllm_run"
    if not tool.is_file():
        raise HmbuildError(f"{tool} was not built; rebuild with `hmbuild build --target {target.name}`.")
    if not Path(model).is_file():
        raise HmbuildError(f"Model file {model} does not exist; fetch the test model with `hmbuild fetch-model`.")
    args = hmllm_run_args(project, options)
    cmd = [*target.runner, str(tool), "--model", str(model), *args] + (["--json"] if json_output else [])
    env = _test_env(target, None, cpu)
    proc = subprocess.run(cmd, env=env, stdout=subprocess.PIPE if json_output else None, stderr=subprocess.PIPE,
                          text=True, errors="replace")
    if proc.returncode != 0:
        lines = [l for l in (proc.stderr or "").splitlines() if l.startswith("hmllm_run:")]
        reason = lines[-1].removeprefix("hmllm_run: ") if lines else exit_reason(proc.returncode)
        if options.chat is not None and lines:
            raise HmbuildError(_sentence(reason))  # a refused conversation says what to change, as it is
        raise HmbuildError(f"Running the model failed: {reason}.")
    if not json_output and proc.stderr:
        sys.stderr.write(proc.stderr)
    return proc.returncode, proc.stdout or ""


def built_tool(project: Project, target: Target, build: BuildResult, name: str, command: str) -> Path:
    """The path of one of the runtime's tools in a build, or one sentence on why it is not there
    (a project whose vendored runtime predates `command` has no source for it)."""
    tool = build.build_dir / "hmllm" / name
    if not tool.is_file():
        tools = project.cpp_dir / "hmllm" / "tools"
        if tools.is_dir() and not (tools / f"{name}.cpp").is_file():
            raise HmbuildError(f"This project's vendored runtime has no {name} tool (it predates `{command}`); "
                               "create a fresh project with `hmbuild new` and run it there.")
        raise HmbuildError(f"{tool} was not built; rebuild with `hmbuild build --target {target.name}`.")
    return tool


def _sentence(reason: str) -> str:
    reason = reason.strip().rstrip(".")
    return reason[:1].upper() + reason[1:] + "."


def run_progress_tool(target: Target, cpu: str | None, tool: Path, args: list[str],
                      progress: Callable[[int, int], None] | None = None,
                      info: Callable[[str], None] | None = None, failure: str = "") -> dict:
    """Runs one of the runtime's long-running tools (hmllm_eval, hmllm_calibrate, hmllm_bench) on the
    target with --json and returns its JSON object (without "ok"). The tool reports "NAME: progress
    DONE/TOTAL" lines on stderr, relayed to progress(done, total); its other "NAME: " lines go to
    info(line). A failure is one sentence, `failure` (e.g. "The benchmark failed: ") then the tool's
    own error or how it ended; the tools' exit 2 (bad arguments) stays exit 2."""
    name = tool.name
    cmd = [*target.runner, str(tool), *args, "--json"]
    proc = subprocess.Popen(cmd, env=_test_env(target, None, cpu), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, errors="replace")
    out_chunks: list[str] = []
    reader = threading.Thread(target=lambda: out_chunks.append(proc.stdout.read()), daemon=True)
    reader.start()
    errors: list[str] = []
    try:
        for line in proc.stderr:
            line = line.rstrip("\n")
            if not line.startswith(f"{name}: "):
                continue  # qemu or sanitizer noise never changes the result
            msg = line.removeprefix(f"{name}: ")
            if msg.startswith("progress "):
                try:
                    done, total = (int(x) for x in msg.split()[1].split("/"))
                except ValueError:
                    continue
                if progress:
                    progress(done, total)
            else:
                errors.append(msg)
                if info:
                    info(msg)
        proc.wait()
    except BaseException:
        proc.kill()
        proc.wait()
        raise
    reader.join()
    data = None
    for candidate in reversed("".join(out_chunks).strip().splitlines()):
        try:
            data = json.loads(candidate)
            break
        except json.JSONDecodeError:
            continue
    if proc.returncode != 0 or not isinstance(data, dict) or not data.get("ok"):
        reason = (data or {}).get("error") or (errors[-1] if errors else f"{name} ended: {exit_reason(proc.returncode)}")
        raise HmbuildError(failure + (_sentence(reason) if not failure else reason.strip().rstrip(".") + "."),
                           2 if proc.returncode == 2 else 1)
    data.pop("ok", None)
    return data
