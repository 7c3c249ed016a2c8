"""`hmbuild package`: the HAR layout, its manifest, determinism and the refusals.

The fast tests pack stand-in ELF files placed where the builder puts libraries (an OpenHarmony
build cannot happen here: the SDK is on no registry); the e2e tests build the project for
linux-arm64 for real and pack that, as a layout check."""
import io
import json
import os
import tarfile
from pathlib import Path

import pytest

from conftest import elf_machine, have_arm64_tools, run_hmbuild

REQUIRED = [
    "package/oh-package.json5",
    "package/Index.ets",
    "package/src/main/ets/LlmEngine.ets",
    "package/src/main/module.json5",
    "package/src/main/cpp/types/lib{n}/Index.d.ts",
    "package/src/main/cpp/types/lib{n}/oh-package.json5",
]
ENV = {"CMAKE_BUILD_PARALLEL_LEVEL": "2"}


def fake_elf(machine: int, size: int = 4096) -> bytes:
    """Enough of an ELF64 header for the e_machine check, padded with a recognisable pattern."""
    head = b"\x7fELF\x02\x01\x01" + b"\0" * 9 + (3).to_bytes(2, "little") + machine.to_bytes(2, "little")
    return head + bytes(range(256)) * (size // 256)


def place_library(project: Path, target: str, data: bytes, name: str = "pk") -> Path:
    lib = project / "build" / f"{target}-release" / f"lib{name}.so"
    lib.parent.mkdir(parents=True, exist_ok=True)
    lib.write_bytes(data)
    return lib


def leftovers(project: Path) -> list[str]:
    build = project / "build"
    return sorted(p.name for p in build.iterdir() if p.name.endswith((".har", ".tmp"))) if build.is_dir() else []


def package(project: Path, *args):
    return run_hmbuild("-C", str(project), "package", *args, env=ENV)


def one_sentence_error(proc, *needles):
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr
    err = proc.stderr.strip()
    assert err.startswith("hmbuild: error: ") and len(err.splitlines()) == 1, err
    for needle in needles:
        assert needle in err, err
    return err


@pytest.fixture
def project(tmp_path):
    root = tmp_path / "pk"
    run_hmbuild("new", str(root), "--name", "pk", check=True)
    return root


def members(har: Path) -> dict[str, tarfile.TarInfo]:
    with tarfile.open(har, "r:gz") as tar:
        return {m.name: m for m in tar.getmembers()}


def read_member(har: Path, name: str) -> bytes:
    with tarfile.open(har, "r:gz") as tar:
        return tar.extractfile(name).read()


# --- fast: stand-in libraries -------------------------------------------------------------------

def test_ohos_builds_are_packed_by_default_under_their_abi_folders(project):
    arm = place_library(project, "ohos-arm64", fake_elf(183))
    x86 = place_library(project, "ohos-x86_64", fake_elf(62, 8192))
    place_library(project, "linux-arm64", fake_elf(183, 1024))  # not packed unless asked for
    proc = package(project, "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    har = project / "build" / "pk-0.1.0.har"
    assert data["har"] == str(har) and har.is_file()
    assert data["abis"] == ["arm64-v8a", "x86_64"]
    assert data["not_ohos_binary"] is False and "warning" not in proc.stderr
    assert data["size_bytes"] == har.stat().st_size
    names = members(har)
    assert sorted(names) == data["files"]
    for need in REQUIRED:
        assert need.format(n="pk") in names
    assert read_member(har, "package/libs/arm64-v8a/libpk.so") == arm.read_bytes()
    assert read_member(har, "package/libs/x86_64/libpk.so") == x86.read_bytes()
    assert "package/NOT_AN_OHOS_BINARY.txt" not in names
    assert not any("/cpp/" in n and n.endswith((".cpp", ".h", ".txt")) for n in names), "no C++ sources in a HAR"
    assert all(n.startswith("package/") for n in names)


def test_the_manifest_names_the_types_inside_the_package(project):
    place_library(project, "ohos-arm64", fake_elf(183))
    assert package(project).returncode == 0
    har = project / "build" / "pk-0.1.0.har"
    manifest = json.loads(read_member(har, "package/oh-package.json5"))
    assert manifest["name"] == "pk" and manifest["version"] == "0.1.0"
    assert manifest["main"] == "Index.ets" and manifest["license"] == "Apache-2.0"
    assert manifest["description"]
    assert manifest["types"] == "src/main/cpp/types/libpk/Index.d.ts"
    assert "package/" + manifest["types"] in members(har)
    assert manifest["dependencies"] == {"libpk.so": "file:./src/main/cpp/types/libpk"}


def test_the_build_profile_lists_only_the_abis_inside(project):
    place_library(project, "ohos-arm64", fake_elf(183))
    assert package(project).returncode == 0
    har = project / "build" / "pk-0.1.0.har"
    profile = json.loads(read_member(har, "package/build-profile.json5"))
    assert profile["buildOption"]["externalNativeOptions"]["abiFilters"] == ["arm64-v8a"]
    assert profile["apiType"] == "stageMode"  # the rest is the project's own
    place_library(project, "ohos-x86_64", fake_elf(62))
    assert package(project).returncode == 0
    profile = json.loads(read_member(har, "package/build-profile.json5"))
    assert profile["buildOption"]["externalNativeOptions"]["abiFilters"] == ["arm64-v8a", "x86_64"]


def test_version_comes_from_oh_package_json5_with_comments(project):
    text = (project / "oh-package.json5").read_text()
    text = text.replace('"version": "0.1.0",', '// bumped for release\n  "version": "1.2.3", /* semver */')
    text = text.replace('"file:./src/main/cpp/types/libpk"', '"file:./src/main/cpp/types/libpk",')  # trailing comma
    (project / "oh-package.json5").write_text(text)
    place_library(project, "ohos-arm64", fake_elf(183))
    proc = package(project, "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["har"].endswith("/build/pk-1.2.3.har")


def test_archive_metadata_is_fixed_and_packing_twice_gives_the_same_bytes(project):
    place_library(project, "ohos-arm64", fake_elf(183))
    har = project / "build" / "pk-0.1.0.har"
    assert package(project).returncode == 0
    first = har.read_bytes()
    os.utime(project / "Index.ets", (1, 1))  # mtimes of the inputs must not leak in
    assert package(project).returncode == 0
    assert har.read_bytes() == first
    assert first[4:8] == b"\0\0\0\0", "gzip header mtime must be 0"
    infos = members(har)
    assert list(infos) == sorted(infos)
    for name, info in infos.items():
        assert info.isfile() and info.uid == 0 and info.gid == 0 and info.uname == "" and info.gname == ""
        assert info.mtime == infos["package/Index.ets"].mtime
        assert info.mode == (0o755 if name.endswith(".so") else 0o644), name


def test_package_before_any_build_names_the_build_command(project):
    err = one_sentence_error(package(project), "hmbuild build --target ohos-arm64", "--target linux-arm64")
    assert "Nothing" in err or "has been built" in err
    assert leftovers(project) == []


def test_only_a_linux_arm64_build_is_not_packed_by_default(project):
    place_library(project, "linux-arm64", fake_elf(183))
    one_sentence_error(package(project), "No OpenHarmony build", "--target linux-arm64")
    assert leftovers(project) == []


def test_host_is_refused(project):
    place_library(project, "host", fake_elf(62))
    one_sentence_error(package(project, "--target", "host"), "not an ABI a phone runs")
    assert leftovers(project) == []


def test_unknown_target_is_refused(project):
    one_sentence_error(package(project, "--target", "ohos-riscv", "--json"), "Unknown target 'ohos-riscv'")
    assert leftovers(project) == []


def test_an_abi_without_a_library_is_refused_and_nothing_is_written(project):
    place_library(project, "ohos-arm64", fake_elf(183))
    proc = package(project, "--target", "ohos-arm64", "--target", "ohos-x86_64", "--json")
    # Without an SDK (real or stand-in) the sentence also says how to get one.
    from hmbuild.targets.target import resolve_target
    sdk_needle = ("OHOS_NDK_HOME",) if resolve_target("ohos-x86_64").missing else ("build --target ohos-x86_64",)
    one_sentence_error(proc, "libpk.so for x86_64", "was not built", *sdk_needle)
    assert json.loads(proc.stdout)["ok"] is False  # --json still gives exactly one object
    assert leftovers(project) == []


def test_two_targets_for_one_abi_are_refused(project):
    place_library(project, "ohos-arm64", fake_elf(183))
    place_library(project, "linux-arm64", fake_elf(183))
    one_sentence_error(package(project, "--target", "ohos-arm64", "--target", "linux-arm64"), "libs/arm64-v8a")
    assert leftovers(project) == []


def test_a_library_of_the_wrong_architecture_is_refused(project):
    place_library(project, "ohos-arm64", fake_elf(62))
    one_sentence_error(package(project), "not an ELF library for arm64-v8a")
    assert leftovers(project) == []


def test_a_missing_module_file_is_refused(project):
    place_library(project, "ohos-arm64", fake_elf(183))
    (project / "src/main/module.json5").unlink()
    one_sentence_error(package(project), "module.json5 is missing")
    assert leftovers(project) == []


def test_a_failed_write_keeps_the_previous_har_and_leaves_no_temporary_file(project, monkeypatch):
    from hmbuild.build import har as packaging
    from hmbuild.errors import HmbuildError
    from hmbuild.config.project import load_project

    place_library(project, "ohos-arm64", fake_elf(183))
    proj = load_project(project)
    good = packaging.package_har(proj, None, "Release")
    before = good.har.read_bytes()
    place_library(project, "ohos-arm64", fake_elf(183, 8192))

    def broken_replace(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(packaging.os, "replace", broken_replace)
    with pytest.raises(HmbuildError, match="No space left on device"):
        packaging.package_har(proj, None, "Release")
    assert good.har.read_bytes() == before
    assert leftovers(project) == ["pk-0.1.0.har"]


def test_read_json5_accepts_comments_and_trailing_commas_and_refuses_the_rest(tmp_path):
    from hmbuild.errors import HmbuildError
    from hmbuild.build.har import read_json5

    f = tmp_path / "a.json5"
    f.write_text('{\n  // c\n  "a": "x // not a comment", /* b */\n  "b": [1, 2,],\n}\n')
    assert read_json5(f) == {"a": "x // not a comment", "b": [1, 2]}
    f.write_text("{a: 'x'}")
    with pytest.raises(HmbuildError, match="double-quoted"):
        read_json5(f)


# --- e2e: a real linux-arm64 build, packed for a layout check ----------------------------------

@pytest.mark.qemu
@pytest.mark.skipif(not have_arm64_tools(), reason="needs g++-aarch64-linux-gnu and qemu-user (see README)")
class TestLinuxArm64LayoutCheck:
    @pytest.fixture(scope="class")
    @classmethod
    def built(cls, tmp_path_factory):
        root = tmp_path_factory.mktemp("har") / "notes"
        run_hmbuild("new", str(root), "--name", "notes", check=True)
        proc = run_hmbuild("-C", str(root), "build", "--target", "linux-arm64", "--json", env=ENV)
        assert proc.returncode == 0, proc.stderr[-3000:]
        return root, Path(json.loads(proc.stdout)["library"])

    def test_the_built_library_is_packed_with_a_plain_warning(self, built):
        root, lib = built
        proc = package(root, "--target", "linux-arm64", "--json")
        assert proc.returncode == 0, proc.stderr
        data = json.loads(proc.stdout)
        assert data["not_ohos_binary"] is True and data["abis"] == ["arm64-v8a"]
        assert "warning" in proc.stderr and "not an OHOS binary" in proc.stderr
        har = Path(data["har"])
        assert har == root / "build" / "notes-0.1.0.har"
        names = members(har)
        for need in REQUIRED:
            assert need.format(n="notes") in names
        packed = read_member(har, "package/libs/arm64-v8a/libnotes.so")
        assert packed == lib.read_bytes()
        scratch = root / "build" / "packed.so"
        scratch.write_bytes(packed)
        assert elf_machine(scratch) == 183
        scratch.unlink()
        assert b"is not an OHOS binary" in read_member(har, "package/NOT_AN_OHOS_BINARY.txt")
        manifest = json.loads(read_member(har, "package/oh-package.json5"))
        assert manifest["types"] == "src/main/cpp/types/libnotes/Index.d.ts"
        with tarfile.open(har, "r:gz") as tar:
            d_ts = tar.extractfile("package/src/main/cpp/types/libnotes/Index.d.ts").read()
        assert d_ts == (root / "src/main/cpp/types/libnotes/Index.d.ts").read_bytes()

    def test_packing_twice_gives_identical_bytes(self, built):
        root, _ = built
        assert package(root, "--target", "linux-arm64").returncode == 0
        first = (root / "build" / "notes-0.1.0.har").read_bytes()
        assert package(root, "--target", "linux-arm64").returncode == 0
        assert (root / "build" / "notes-0.1.0.har").read_bytes() == first
        assert gzip_ok(first)

    def test_default_and_missing_abi_refusals_on_a_real_build(self, built):
        root, _ = built
        one_sentence_error(package(root), "No OpenHarmony build", "--target linux-arm64")
        one_sentence_error(package(root, "--target", "ohos-x86_64"), "libnotes.so for x86_64", "was not built")
        one_sentence_error(package(root, "--target", "host"), "not an ABI a phone runs")
        assert not any(p.name.endswith(".tmp") for p in (root / "build").iterdir())


def gzip_ok(blob: bytes) -> bool:
    with tarfile.open(fileobj=io.BytesIO(blob), mode="r:gz") as tar:
        return len(tar.getnames()) > 0
