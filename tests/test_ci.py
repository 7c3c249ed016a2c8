"""The CI definitions `hmbuild new` / `hmbuild ci` write: valid YAML under each provider's schema,
the CPU matrix, the SDK-gated ohos job, the caches, and commands that are the ones the test suite
runs. Nothing here builds; the whole file takes a few seconds."""
import ast
import hashlib
import itertools
import json
import re
import shlex
import shutil
import subprocess
import sys
import tarfile
import tomllib
import zipfile
from pathlib import Path

import pytest
import yaml

from conftest import REPO, run_hmbuild
from test_cli import assert_clean_error

from hmbuild.build import builder
from hmbuild.cli import cli
from hmbuild.errors import HmbuildError
from hmbuild.model import catalog as models
from hmbuild.scaffold import ci, ci_switch
from hmbuild.targets import node as node_tools
from hmbuild.targets.ohos_standin import standin_root
from hmbuild.targets.target import find_ohos_sdk

GITHUB, GITLAB = ".github/workflows/ci.yml", ".gitlab-ci.yml"
SCHEMAS = {GITHUB: "vendor.github-workflows", GITLAB: "vendor.gitlab-ci"}
CPUS = ["cortex-a53", "cortex-a76", "max"]
GITHUB_CPU = "${{ matrix.cpu }}"


@pytest.fixture(scope="module")
def projects(tmp_path_factory):
    """One project per provider, from the real `hmbuild new --ci`."""
    root = tmp_path_factory.mktemp("ci")
    for provider in ("github", "gitlab"):
        run_hmbuild("new", str(root / provider), "--name", "demo", "--ci", provider, check=True)
    return root


def ci_file(projects, rel):
    return projects / ("github" if rel == GITHUB else "gitlab") / rel


def load(projects, rel):
    return yaml.safe_load(ci_file(projects, rel).read_text())


def check_schema(path, rel):
    """check-jsonschema with the provider's schema, bundled with it (SchemaStore's): no network."""
    return subprocess.run([sys.executable, "-m", "check_jsonschema", "--builtin-schema", SCHEMAS[rel], str(path)],
                          capture_output=True, text=True)


@pytest.fixture(scope="module")
def github(projects):
    return load(projects, GITHUB)


@pytest.fixture(scope="module")
def gitlab(projects):
    return {k: v for k, v in load(projects, GITLAB).items() if isinstance(v, dict) and "script" in v}


def github_jobs(github):
    """{job id: (job, its matrix CPUs or [None], [shell lines of its run steps])}."""
    out = {}
    for name, job in github["jobs"].items():
        cpus = job.get("strategy", {}).get("matrix", {}).get("cpu", [None])
        lines = [line for step in job["steps"] if "run" in step for line in step["run"].splitlines()]
        out[name] = (job, cpus, lines)
    return out


def gitlab_jobs(gitlab):
    out = {}
    for name, job in gitlab.items():
        matrix = job.get("parallel", {}).get("matrix", [{}])
        out[name] = (job, [cpu for row in matrix for cpu in row.get("CPU", [None])], job["script"])
    return out


def hmbuild_commands(lines, cpu, cpu_ref):
    """argv of each `hmbuild ...` line with the matrix value put in, up to a pipe (tee)."""
    for line in lines:
        line = line.removeprefix(ci.STANDIN_GUARD)  # a command only the stand-in's binaries can run
        if line.startswith("hmbuild "):
            text = line.replace(cpu_ref, cpu) if cpu else line
            assert "$" not in text.split("|")[0], f"unexpanded variable in {line!r}"
            yield tuple(shlex.split(text.split("|")[0])[1:])


@pytest.mark.parametrize("rel", [GITHUB, GITLAB])
def test_each_file_is_yaml_and_valid_under_its_providers_schema(projects, rel):
    path = ci_file(projects, rel)
    assert isinstance(yaml.safe_load(path.read_text()), dict)
    proc = check_schema(path, rel)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_the_schema_check_fails_on_a_broken_workflow(projects, tmp_path):
    """The validation above can fail: a job without runs-on is not a workflow GitHub accepts."""
    data = load(projects, GITHUB)
    del data["jobs"]["host"]["runs-on"]
    bad = tmp_path / "ci.yml"
    bad.write_text(yaml.safe_dump(data).replace("true:", "on:", 1))  # PyYAML reads `on` as true
    proc = check_schema(bad, GITHUB)
    assert proc.returncode == 1 and "runs-on" in proc.stdout


def test_linux_arm64_runs_the_whole_suite_once_and_the_kernel_dispatch_on_the_other_cpus(github, gitlab):
    assert "strategy" not in github["jobs"]["linux-arm64"] and "parallel" not in gitlab["linux-arm64"]
    others = [c for c in CPUS if c != "cortex-a76"]
    assert github["jobs"]["linux-arm64-dispatch"]["strategy"]["matrix"]["cpu"] == others
    assert gitlab["linux-arm64-dispatch"]["parallel"]["matrix"] == [{"CPU": others}]
    for job, cpu_ref in (("linux-arm64", "cortex-a76"), ("linux-arm64-dispatch", None)):
        for lines in (github_jobs(github)[job][2], gitlab[job]["script"]):
            tests = [c for c in lines if c.startswith("hmbuild test")]
            assert len(tests) == 1
            if cpu_ref:
                assert f"--cpu {cpu_ref}" in tests[0] and "--only" not in tests[0]
            else:
                assert ("--cpu " + GITHUB_CPU in tests[0] or "--cpu $CPU" in tests[0])
                assert "--only kernels,session" in tests[0]


def test_the_ohos_job_runs_only_when_an_sdk_or_the_public_files_url_is_set(projects, github, gitlab):
    assert github["jobs"]["ohos"]["if"] == "${{ vars.OHOS_SDK_URL != '' || vars.OHOS_PUBLIC_URL != '' }}"
    assert github["env"]["OHOS_SDK_URL"] == "${{ vars.OHOS_SDK_URL }}"
    assert github["env"]["OHOS_PUBLIC_URL"] == "${{ vars.OHOS_PUBLIC_URL }}"
    assert gitlab["ohos"]["rules"] == [{"if": "$OHOS_SDK_URL"}, {"if": "$OHOS_PUBLIC_URL"}]
    for jobs, ref in ((github_jobs(github), GITHUB_CPU), (gitlab_jobs(gitlab), "$CPU")):
        for name, (job, cpus, lines) in jobs.items():
            targets = {c[c.index("--target") + 1] for cpu in cpus for c in hmbuild_commands(lines, cpu, ref)
                       if "--target" in c}
            gated = "if" in job or "rules" in job
            assert gated == (name == "ohos")
            assert gated == any(t.startswith("ohos-") for t in targets), name
    for rel in (GITHUB, GITLAB):  # the header documents both variables
        header = [l for l in ci_file(projects, rel).read_text().splitlines() if l.startswith("#")]
        assert any(l.startswith("#   OHOS_SDK_URL ") for l in header) and any("HMBUILD_PIP_SPEC" in l for l in header)
        assert any(l.startswith("#   OHOS_PUBLIC_URL ") for l in header)


def test_the_ohos_job_tests_both_targets_only_with_the_stand_in_and_packs_both_abis(github, gitlab):
    for lines in (github_jobs(github)["ohos"][2], gitlab["ohos"]["script"]):
        guarded = [l for l in lines if l.startswith(ci.STANDIN_GUARD)]
        assert [shlex.split(l.removeprefix(ci.STANDIN_GUARD).split("|")[0])[1:4] for l in guarded] == [
            ["test", "--target", "ohos-arm64"], ["test", "--target", "ohos-x86_64"]]
        assert not [l for l in lines if l.startswith("hmbuild test") and l not in guarded]
        assert "hmbuild package --target ohos-arm64 --target ohos-x86_64 --json | tee reports/package.json" in lines


needs_curl_unzip = pytest.mark.skipif(not (shutil.which("curl") and shutil.which("unzip")), reason="needs curl and unzip")


@pytest.fixture
def sdk_script(github):
    step = next(s for s in github["jobs"]["ohos"]["steps"] if s.get("name", "").startswith("The OpenHarmony SDK"))
    return step["run"]


def test_gitlab_runs_the_same_sdk_step(github, gitlab, sdk_script):
    block = next(l for l in gitlab["ohos"]["script"] if l.startswith("if [ -n \"${OHOS_NDK_HOME"))
    assert block.rstrip("\n").splitlines() == sdk_script.rstrip("\n").splitlines()[:len(ci.SDK_STEP)]
    assert "export OHOS_SDK_NATIVE OHOS_SDK_KIND" in gitlab["ohos"]["script"]


def _native_zip(path, prefix=""):
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr(f"{prefix}native/build/cmake/ohos.toolchain.cmake", "# OpenHarmony toolchain\n")
        zf.writestr(f"{prefix}native/llvm/bin/README", "")


def _run_sdk_script(script, tmp_path, archive, var="OHOS_SDK_URL", path="/usr/bin:/bin", env=None):
    env_file = tmp_path / "github_env"
    env_file.write_text("")
    work = tmp_path / "work"
    work.mkdir()
    proc = subprocess.run(["bash", "-eo", "pipefail", "-c", script], cwd=work, capture_output=True, text=True,
                          env={**(env or {}), "PATH": path, var: archive.as_uri(), "GITHUB_ENV": str(env_file)})
    return proc, dict(line.split("=", 1) for line in env_file.read_text().splitlines())


@needs_curl_unzip
@pytest.mark.parametrize("kind", ["native zip", "SDK tarball with nested zips"])
def test_the_sdk_step_points_hmbuild_at_the_unpacked_native_folder(sdk_script, tmp_path, monkeypatch, kind):
    """The ohos job's own shell lines, run with real curl/unzip/tar on a file:// URL."""
    if kind == "native zip":
        archive = tmp_path / "native-linux-x64-5.0.0.71-Release.zip"
        _native_zip(archive)
    else:
        inner = tmp_path / "native-linux-x64-5.0.0.71-Release.zip"
        _native_zip(inner)
        archive = tmp_path / "ohos-sdk-public.tar.gz"
        with tarfile.open(archive, "w:gz") as tf:
            tf.add(inner, arcname="linux/native-linux-x64-5.0.0.71-Release.zip")
    proc, env = _run_sdk_script(sdk_script, tmp_path, archive)
    assert proc.returncode == 0, proc.stderr
    assert env["OHOS_SDK_KIND"] == "sdk"
    monkeypatch.setenv("OHOS_SDK_NATIVE", env["OHOS_SDK_NATIVE"])
    monkeypatch.delenv("OHOS_NDK_HOME", raising=False)
    native, _ = find_ohos_sdk()
    assert native is not None and str(native) == env["OHOS_SDK_NATIVE"]
    assert native.name == "native" and native.is_relative_to(tmp_path / "work" / ".ohos-sdk")


OHOS_PUBLIC = next((d for d in (REPO.parent / "shared" / "ohos-public", Path("/work/shared/ohos-public"))
                    if (d / "build/cmake/ohos.toolchain.cmake").is_file()), None)


def _package_tool_doubles(bin_dir, log):
    """Test doubles of Debian's dpkg and apt-get (this test must not add architectures or install
    packages on the machine): they record the calls that would change the system and pass the
    rest (hmbuild's own `apt-get download`, `dpkg --print-foreign-architectures`) to the real tools."""
    bin_dir.mkdir()
    for tool, changes in (("dpkg", "--add-architecture"), ("apt-get", "update|install")):
        script = bin_dir / tool
        script.write_text(f"#!/bin/sh\ncase \"$1\" in {changes}) echo \"{tool} $*\" >> {log}; exit 0;; esac\n"
                          f"exec /usr/bin/{tool} \"$@\"\n")
        script.chmod(0o755)
    hm = bin_dir / "hmbuild"
    hm.write_text(f"#!/bin/sh\nexec {sys.executable} -m hmbuild \"$@\"\n")
    hm.chmod(0o755)


@needs_curl_unzip
@pytest.mark.skipif(OHOS_PUBLIC is None, reason="needs ../shared/ohos-public (OpenHarmony's public files)")
def test_without_an_sdk_the_step_builds_the_stand_in_from_the_public_files_url(sdk_script, tmp_path):
    """The stand-in branch of the ohos job's own shell lines, with a tarball of the public files on a
    file:// URL and the real `hmbuild setup --ohos-public` (its cached stand-in when this machine has one)."""
    from hmbuild.resources import cache_dir

    archive = tmp_path / "ohos-public.tar.gz"
    with tarfile.open(archive, "w:gz") as tf:
        tf.add(OHOS_PUBLIC, arcname="ohos-public")
    log = tmp_path / "package-tools.log"
    _package_tool_doubles(tmp_path / "bin", log)
    proc, env = _run_sdk_script(sdk_script, tmp_path, archive, var="OHOS_PUBLIC_URL", path=f"{tmp_path / 'bin'}:/usr/bin:/bin",
                                env={"HOME": str(Path.home()), "HMBUILD_CACHE": str(cache_dir())})
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert env["OHOS_SDK_KIND"] == "stand-in" and "OHOS_SDK_NATIVE" not in env
    assert log.read_text().splitlines() == [
        "dpkg --add-architecture arm64", "apt-get update -qq",
        "apt-get install -y -qq --no-install-recommends clang-19 lld-19 llvm-19 libclang-rt-19-dev"]
    assert "OpenHarmony SDK stand-in (OHOS ABI from public parts" in proc.stdout
    assert (tmp_path / "work" / ".ohos-public" / "ohos-public" / "build/cmake/ohos.toolchain.cmake").is_file()


@needs_curl_unzip
def test_the_public_files_url_without_the_toolchain_file_fails_with_a_sentence(sdk_script, tmp_path):
    archive = tmp_path / "not-public-files.tar.gz"
    with tarfile.open(archive, "w:gz") as tf:
        tf.add(REPO / "README.md", arcname="README.md")
    log = tmp_path / "package-tools.log"
    _package_tool_doubles(tmp_path / "bin", log)
    proc, env = _run_sdk_script(sdk_script, tmp_path, archive, var="OHOS_PUBLIC_URL", path=f"{tmp_path / 'bin'}:/usr/bin:/bin")
    assert proc.returncode != 0
    assert "OHOS_PUBLIC_URL holds no build/cmake/ohos.toolchain.cmake (the public OpenHarmony files)" in proc.stderr
    assert "OHOS_SDK_KIND" not in env


@needs_curl_unzip
def test_the_sdk_step_fails_with_a_sentence_on_an_archive_without_the_toolchain(sdk_script, tmp_path):
    archive = tmp_path / "not-an-sdk.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("README", "")
    proc, env = _run_sdk_script(sdk_script, tmp_path, archive)
    assert proc.returncode != 0 and "OHOS_SDK_URL holds no native/build/cmake/ohos.toolchain.cmake" in proc.stderr
    assert env == {}


def _under(path, cached):
    return any(path == c or c in path.parents for c in cached)


def test_the_caches_hold_pip_npm_conan_ccache_and_the_model(github, gitlab, projects, monkeypatch):
    """Pointed where each provider's file points them, the folders hmbuild and the tools use are
    all inside a cached path (the model only in jobs that fetch it)."""
    root = projects / "github"  # the layout is the project's, the same for both providers
    gl_vars = load(projects, GITLAB)["variables"]
    gh_env = [line for job in github["jobs"].values() for step in job["steps"]
              if step.get("name") == "Cache folders inside the project" for line in step["run"].splitlines()]
    gh_vars = dict(re.fullmatch(r'echo "(\w+)=\$PWD/(\S+)" >> "\$GITHUB_ENV"', line).groups() for line in gh_env)
    assert gh_vars == {k: v.removeprefix("$CI_PROJECT_DIR/") for k, v in gl_vars.items() if "$CI_PROJECT_DIR/" in v}
    env = {k: root / v for k, v in gh_vars.items()}
    assert {"HMBUILD_CACHE", "PIP_CACHE_DIR", "npm_config_cache", "CCACHE_DIR"} <= env.keys()
    for key, value in env.items():
        monkeypatch.setenv(key, str(value))
    monkeypatch.delenv("HMBUILD_CONAN_HOME", raising=False)
    npm_prefixes = []

    def record(prefix, spec, extra, what):  # where `hmbuild setup` would install the npm pieces
        npm_prefixes.append(prefix)

    monkeypatch.setattr(node_tools, "_npm_install", record)
    node_tools.napi_headers_dir(install=True)
    node_tools.arm64_node(install=True)
    model = models.model_path()
    always = [env["PIP_CACHE_DIR"], env["npm_config_cache"], env["CCACHE_DIR"], builder.conan_home(), *npm_prefixes]
    assert len(npm_prefixes) == 2
    gh_caches = {name: [root / p for step in job["steps"] if step.get("uses", "").startswith("actions/cache@")
                        for p in step["with"]["path"].split()] for name, job in github["jobs"].items()}
    gl_caches = {name: [root / p for c in job["cache"] for p in c["paths"]] for name, job in gitlab.items()}
    for caches in (gh_caches, gl_caches):
        assert caches.keys() == {"host", "linux-arm64", "linux-arm64-dispatch", "ohos"}
        for name, cached in caches.items():
            for path in always:
                assert _under(path, cached), (name, path)
            assert _under(model, cached) and _under(model.with_name(model.name + ".verified"), cached)
            assert _under(standin_root(), cached) == (name == "ohos"), name
            assert not _under(env["HMBUILD_CACHE"] / "models" / "pip", cached), "the model's pip chunks are not kept"
    for job in gitlab.values():  # GitLab caches only paths inside the project
        assert all(not p.startswith(("/", "..", "$")) for c in job["cache"] for p in c["paths"])


def _bootstrap():
    text = (REPO / "bootstrap.sh").read_text()
    packages = set(re.findall(r"need\+=\(([^)]+)\)", text))
    commands = set()
    for line in text.splitlines():
        line = line.strip()
        if line.startswith(".venv/bin/hmbuild "):
            argv = shlex.split(line)[1:]
            commands.add(tuple(argv[2:] if argv[0] == "-C" else argv))
    return packages, commands


def test_the_apt_packages_are_bootstraps_less_node_and_fuzzing_plus_sdk_unpacking(github, gitlab):
    installed = set()
    for lines in [job[2] for job in github_jobs(github).values()] + [job["script"] for job in gitlab.values()]:
        for line in (l for item in lines for l in item.splitlines()):  # GitLab's SDK step is one block
            if " apt-get install " in f" {line}":
                installed |= set(line.split("--no-install-recommends", 1)[1].split())
    bootstrap, _ = _bootstrap()
    # The ohos job installs the stand-in's LLVM only when it builds the stand-in (a real SDK brings
    # its own), as bootstrap.sh does for hmbuild's own tests.
    assert bootstrap - installed == {"nodejs", "npm", "git"}
    assert installed - bootstrap == {"curl", "unzip", "xz-utils"}
    assert all(job["container"] == "node:20-bookworm" for job in github["jobs"].values())


def _parametrized(func):
    """{argument name: [values]} from a test's @pytest.mark.parametrize decorators (literals only)."""
    out = {}
    for deco in func.decorator_list:
        if isinstance(deco, ast.Call) and ast.unparse(deco.func) == "pytest.mark.parametrize":
            names = [n.strip() for n in ast.literal_eval(deco.args[0]).split(",")]
            try:
                rows = ast.literal_eval(deco.args[1])
            except ValueError:
                continue
            for i, name in enumerate(names):
                out[name] = [row[i] if len(names) > 1 else row for row in rows]
    return out


def _suite_commands():
    """argv of every hmbuild command the test suite runs that can be read from its source:
    bootstrap.sh's lines, and run_hmbuild / hm / build_json calls in the end-to-end tests whose
    arguments are literals or parametrized values (the project folder dropped)."""
    _, commands = _bootstrap()
    prefix = {"run_hmbuild": (), "hm": (), "build_json": ("build", "--json")}
    for name in ("test_e2e.py", "test_examples.py", "test_cli.py", "test_ohos_standin.py"):
        tree = ast.parse((REPO / "tests" / name).read_text())
        for func in ast.walk(tree):
            if not isinstance(func, ast.FunctionDef):
                continue
            params = _parametrized(func)
            for loop in ast.walk(func):  # `for target in ("ohos-arm64", "ohos-x86_64"):` counts like a parametrize
                if isinstance(loop, ast.For) and isinstance(loop.target, ast.Name):
                    try:
                        params[loop.target.id] = list(ast.literal_eval(loop.iter))
                    except ValueError:
                        pass
            for call in ast.walk(func):
                if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id in prefix):
                    continue
                args = call.args
                if call.func.id in ("hm", "build_json"):
                    args = args[1:]  # the project
                elif args and isinstance(args[0], ast.Constant) and args[0].value == "-C":
                    args = args[2:]
                choices = []
                for arg in args:
                    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                        choices.append([arg.value])
                    elif isinstance(arg, ast.Name) and arg.id in params:
                        choices.append(params[arg.id])
                    else:
                        break
                else:
                    for argv in itertools.product(*choices):
                        commands.add((*prefix[call.func.id], *argv))
    return commands


def _same_run(argv):
    """--json changes what is printed, not what runs."""
    return tuple(a for a in argv if a != "--json")


def test_every_hmbuild_command_in_the_ci_files_is_one_the_test_suite_runs(github, gitlab):
    suite = {_same_run(c) for c in _suite_commands()}
    assert ("test", "--target", "linux-arm64", "--cpu", "cortex-a76") in suite  # the reader finds bootstrap.sh's
    ran = set()
    for jobs, ref in ((github_jobs(github), GITHUB_CPU), (gitlab_jobs(gitlab), "$CPU")):
        for name, (job, cpus, lines) in jobs.items():
            for cpu in cpus:
                for argv in hmbuild_commands(lines, cpu, ref):
                    command = cli.get_command(None, argv[0])
                    command.make_context(argv[0], list(argv[1:]))  # a usage error raises here
                    # The ohos job's commands are the stand-in's (tests/test_ohos_standin.py).
                    assert _same_run(argv) in suite, f"{name} runs `hmbuild {shlex.join(argv)}`, which no test runs"
                    ran.add(_same_run(argv))
    assert {("test", "--target", "host"), ("build", "--target", "linux-arm64"), ("build", "--target", "ohos-x86_64"),
            ("test", "--target", "ohos-arm64")} <= ran
    assert {c for c in ran if "--cpu" in c} == {("test", "--target", "linux-arm64", "--cpu", "cortex-a76")} | {
        ("test", "--target", "linux-arm64", "--cpu", c, "--only", "kernels,session") for c in ("cortex-a53", "max")}


def test_hmbuild_ci_switches_a_project_to_gitlab_and_keeps_hmbuild_toml_comments(tmp_path):
    root = tmp_path / "p"
    run_hmbuild("new", str(root), check=True)
    before = (root / "hmbuild.toml").read_text()
    mode = (root / "hmbuild.toml").stat().st_mode
    assert (root / GITHUB).is_file() and not (root / GITLAB).exists()
    proc = run_hmbuild("-C", str(root), "ci", "--provider", "gitlab", "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == {"ok": True, "provider": "gitlab", "files": [GITLAB], "removed": [GITHUB],
                                       "kept": []}
    assert not (root / ".github").exists()  # hmbuild's unchanged workflow went with its folder
    after = (root / "hmbuild.toml").read_text()
    assert after == before.replace('ci = "github"', 'ci = "gitlab"', 1)  # comments and layout kept
    assert tomllib.loads(after)["project"]["ci"] == "gitlab" and (root / "hmbuild.toml").stat().st_mode == mode
    assert "hmbuild ci --provider gitlab" in (root / GITLAB).read_text().splitlines()[0]
    manifest = json.loads((root / ".hmbuild/generated.json").read_text())["files"]
    assert manifest[GITLAB] == hashlib.sha256((root / GITLAB).read_bytes()).hexdigest() and GITHUB not in manifest
    # hmbuild's record is the project as rendered with gitlab: `check` finds nothing behind, and
    # `new --force` refreshes the project without a conflict.
    assert "Up to date" in run_hmbuild("-C", str(root), "check", check=True).stdout
    run_hmbuild("new", str(root), "--force", "--ci", "gitlab", check=True)
    # A second run with no provider rewrites the recorded one and changes nothing.
    proc = run_hmbuild("-C", str(root), "ci")
    assert proc.returncode == 0 and f"Wrote {GITLAB} (gitlab)." in proc.stdout
    assert (root / "hmbuild.toml").read_text() == after


def test_a_user_edited_ci_file_is_refused_and_nothing_is_written(tmp_path):
    root = tmp_path / "p"
    run_hmbuild("new", str(root), check=True)
    workflow = root / GITHUB
    edited = workflow.read_text() + "# our own step\n"
    workflow.write_text(edited)
    toml = (root / "hmbuild.toml").read_text()
    for provider in ("github", "gitlab"):
        proc = run_hmbuild("-C", str(root), "ci", "--provider", provider)
        if provider == "github":
            assert_clean_error(proc, GITHUB, "--force")
        else:  # switching leaves the edited workflow alone, and says so
            assert proc.returncode == 0 and f"Left {GITHUB} alone" in proc.stdout
            run_hmbuild("-C", str(root), "check", check=True)  # the edited workflow is the user's now
            (root / GITLAB).unlink()
            (root / "hmbuild.toml").write_text(toml)
        assert workflow.read_text() == edited
    assert (root / "hmbuild.toml").read_text() == toml
    proc = run_hmbuild("-C", str(root), "ci", "--provider", "github", "--force")
    assert proc.returncode == 0, proc.stderr
    assert workflow.read_text() == ci.ci_files({"name": "p", "hmbuild_version": "0.1.0", "ci": "github"})[GITHUB]


def test_a_bad_provider_is_one_sentence_and_changes_nothing(tmp_path):
    root = tmp_path / "p"
    run_hmbuild("new", str(root), check=True)
    toml = (root / "hmbuild.toml").read_text()
    proc = run_hmbuild("-C", str(root), "ci", "--provider", "travis", "--json")
    assert_clean_error(proc, "'travis'", "github, gitlab, none")
    assert json.loads(proc.stdout)["ok"] is False
    assert (root / "hmbuild.toml").read_text() == toml and not (root / GITLAB).exists()
    assert_clean_error(run_hmbuild("-C", str(tmp_path), "ci"), "not an hmbuild project")


def test_provider_none_removes_hmbuilds_ci_file_also_in_a_project_without_a_recorded_base(tmp_path):
    root = tmp_path / "p"
    run_hmbuild("new", str(root), "--ci", "gitlab", check=True)
    (root / ".hmbuild/base.tar.gz").unlink()  # as a project from before hmbuild recorded its render
    result = ci_switch.write_ci(root, "none")
    assert (result.written, result.removed) == ([], [GITLAB]) and not (root / GITLAB).exists()
    assert GITLAB not in json.loads((root / ".hmbuild/generated.json").read_text())["files"]
    assert tomllib.loads((root / "hmbuild.toml").read_text())["project"]["ci"] == "none"
    with pytest.raises(HmbuildError, match="Unknown CI provider"):
        ci_switch.write_ci(root, "jenkins")


def test_git_ignores_what_the_ci_writes_into_the_project(projects):
    """The caches, reports and SDK download the jobs leave in the checkout are never committed."""
    from hmbuild.scaffold import ci

    for provider in ("github", "gitlab"):
        ignored = (projects / provider / ".gitignore").read_text().splitlines()
        for path in (ci.CACHE_ROOT, ci.REPORTS, ".ohos-sdk", ".ohos-sdk.archive", ".ohos-public", ".ohos-public.archive"):
            assert f"/{path}/" in ignored or f"/{path}" in ignored, path
