"""The NDK-module check (hmbuild/build/ndk_check.py): a real OHOS-built module from npm passes,
tiny ELF files compiled here show each check failing and passing, and bad input is one sentence.
The linux-arm64 build of the shared project failing it, and the registration loader on the host
build, are in tests/test_e2e.py, which builds those already."""
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import run_hmbuild
from hmbuild.build.ndk_check import NdkExports, check_module, parse_version_script
from hmbuild.errors import HmbuildError
from hmbuild.resources import cache_dir

REPO = Path(__file__).resolve().parents[1]
OHOS_PUBLIC = Path(__file__).resolve().parents[2] / "shared" / "ohos-public"
if not OHOS_PUBLIC.is_dir():
    OHOS_PUBLIC = Path("/work/shared/ohos-public")
needs_public = pytest.mark.skipif(not OHOS_PUBLIC.is_dir(), reason="needs ../shared/ohos-public (OpenHarmony's public files)")
CLANG = shutil.which("clang-19")
LLD = shutil.which("ld.lld-19") or shutil.which("ld.lld")
needs_clang = pytest.mark.skipif(not (CLANG and LLD), reason="needs clang-19 and lld-19 (apt-get install -y clang-19 lld-19)")

# A real OHOS-built Node-API addon (OHOS clang 15 / lld 15), kept in hmbuild's npm cache.
REFERENCE = "@napi-rs/snappy-openharmony-arm64@7.4.3"


@pytest.fixture(scope="module")
def exports():
    return NdkExports.from_public(OHOS_PUBLIC)


@pytest.fixture(scope="module")
def reference_module():
    from hmbuild.targets.node import _npm_install

    prefix = cache_dir() / "npm" / "ref-ohos"
    node = prefix / "node_modules" / "@napi-rs" / "snappy-openharmony-arm64" / "snappy.openharmony-arm64.node"
    if not node.is_file():
        try:  # the package declares os=openharmony, cpu=arm64
            _npm_install(prefix, REFERENCE, ["--os=openharmony", "--cpu=arm64", "--force"], "an OHOS-built reference module")
        except HmbuildError as exc:
            pytest.skip(str(exc))
    return node


# -- tiny modules ---------------------------------------------------------------------------------

OHOS_NOTE = """
.section .note.ohos.ident,"a",%note
.balign 4
.long 5
.long 4
.long 1
.asciz "OHOS"
.balign 4
.long 0
"""

MODULE = """
struct napi_module;
extern int napi_module_register(struct napi_module *);
extern int napi_create_int32(void *, int, void **);
extern void *malloc(unsigned long);
%(extra_decl)s
static struct napi_module *mod;
%(ctor)s static void reg(void) { napi_module_register(mod); }
int f(void) { void *p = malloc(1); %(extra_use)s return napi_create_int32(p, 1, 0); }
"""


def tiny(tmp_path, name, *, arch="aarch64", note=True, now=True, unknown=None, weak=None, ctor=True, flags=()):
    src = tmp_path / f"{name}.c"
    decl, use = "", ""
    if unknown:
        decl += f"extern int {unknown}(void);\n"
        use += f"{unknown}();"
    if weak:
        decl += f"extern int {weak}(void) __attribute__((weak));\n"
        use += f"if ({weak}) {weak}();"
    src.write_text(MODULE % {"extra_decl": decl, "extra_use": use,
                             "ctor": "__attribute__((constructor))" if ctor else "__attribute__((used))"})
    files = [str(src)]
    if note:
        (tmp_path / f"{name}-note.s").write_text(OHOS_NOTE)
        files.append(str(tmp_path / f"{name}-note.s"))
    out = tmp_path / f"lib{name}.so"
    cmd = [CLANG, f"--target={arch}-linux-gnu", "-shared", "-nostdlib", "-fPIC", f"--ld-path={LLD}", *files,
           "-o", str(out), *flags]
    if now:
        cmd.append("-Wl,-z,now")
    else:
        cmd.append("-Wl,-z,lazy")
    subprocess.run(cmd, check=True, capture_output=True)
    return out


def check(report, name):
    return next(c for c in report.checks if c.name == name)


@needs_public
@needs_clang
def test_a_tiny_arkts_module_passes_every_check(tmp_path, exports):
    report = check_module(tiny(tmp_path, "good"), arch="aarch64", exports=exports)
    assert report.ok, "\n".join(report.lines())
    assert report.kind == "ArkTS module"
    assert "passes" in report.lines()[0]
    assert json.loads(json.dumps(report.to_json()))["ok"] is True


@needs_public
@needs_clang
def test_an_import_no_ndk_library_exports_is_named(tmp_path, exports):
    report = check_module(tiny(tmp_path, "unknown", unknown="hm_not_on_the_phone"), arch="aarch64", exports=exports)
    assert not report.ok and [c.name for c in report.failed()] == ["imports"]
    assert "1: hm_not_on_the_phone" in check(report, "imports").detail


@needs_public
@needs_clang
def test_a_weak_unknown_import_is_named_but_allowed(tmp_path, exports):
    report = check_module(tiny(tmp_path, "weak", weak="hm_maybe_there"), arch="aarch64", exports=exports)
    assert report.ok, "\n".join(report.lines())
    assert "weak, allowed to be absent 1: hm_maybe_there" in check(report, "imports").detail


@needs_public
@needs_clang
def test_lazy_binding_and_no_ohos_note_fail(tmp_path, exports):
    report = check_module(tiny(tmp_path, "lazy", now=False, note=False), arch="aarch64", exports=exports)
    assert {c.name for c in report.failed()} == {"bind-now", "ohos-note"}
    assert "no BIND_NOW" in check(report, "bind-now").detail
    assert "no .note.ohos.ident" in check(report, "ohos-note").detail


@needs_public
@needs_clang
def test_the_wrong_machine_fails(tmp_path, exports):
    report = check_module(tiny(tmp_path, "x86", arch="x86_64"), arch="aarch64", exports=exports)
    assert [c.name for c in report.failed()] == ["machine"]
    assert "EM_X86_64" in check(report, "machine").detail
    assert check_module(tmp_path / "libx86.so", arch="x86_64", exports=exports).ok


@needs_public
@needs_clang
def test_no_constructor_means_no_registration(tmp_path, exports):
    report = check_module(tiny(tmp_path, "noctor", ctor=False), arch="aarch64", exports=exports)
    assert [c.name for c in report.failed()] == ["registration"]
    assert "no DT_INIT_ARRAY" in check(report, "registration").detail


@needs_public
@needs_clang
def test_needed_libraries_must_be_ndk_ones_unless_shipped(tmp_path, exports):
    dep = tmp_path / "libextra.so"
    (tmp_path / "extra.c").write_text("int hm_extra(void) { return 1; }\n")
    subprocess.run([CLANG, "--target=aarch64-linux-gnu", "-shared", "-nostdlib", "-fPIC", f"--ld-path={LLD}",
                    str(tmp_path / "extra.c"), "-o", str(dep)], check=True)
    mod = tiny(tmp_path, "withdep", unknown="hm_extra", flags=(f"-L{tmp_path}", "-lextra"))
    report = check_module(mod, arch="aarch64", exports=exports)
    assert {c.name for c in report.failed()} == {"needed", "imports"}
    assert "libextra.so" in check(report, "needed").detail
    assert check_module(mod, arch="aarch64", exports=exports, shipped=[dep]).ok


def test_the_version_script_reader_keeps_global_names_only():
    names, patterns = parse_version_script("""
    LIBC_1 {
      global:
        malloc;   # the allocator
        # commented_out;
        /* also_out; */ free;
        hm_*;
      local:
        *;
    };""")
    assert names == {"malloc", "free"} and patterns == ("hm_*",)


@needs_public
def test_the_public_lists_are_read(exports):
    assert exports.provider("napi_module_register") == "libace_napi.z.so"
    assert exports.provider("OH_LOG_Print") == "libhilog_ndk.z.so"
    assert exports.provider("malloc") == "libc.so"
    assert exports.provider("__libc_mmap") is None  # commented out in libc.map.txt
    same = NdkExports.from_files(OHOS_PUBLIC / "interface_sdk_c/arkui/napi/libnapi.ndk.json",
                                 OHOS_PUBLIC / "interface_sdk_c/hiviewdfx/hilog/libhilog.ndk.json",
                                 OHOS_PUBLIC / "third_party_musl/libc.map.txt")
    assert same.names == exports.names


@needs_clang
def test_exports_from_a_sysroot_are_the_libraries_defined_symbols(tmp_path):
    libdir = tmp_path / "sysroot" / "usr" / "lib" / "aarch64-linux-ohos"
    libdir.mkdir(parents=True)
    for lib, sym in [("libc.so", "malloc"), ("libace_napi.z.so", "napi_module_register"),
                     ("libhilog_ndk.z.so", "OH_LOG_Print")]:
        (tmp_path / "s.c").write_text(f"void {sym}(void) {{}}\n")
        subprocess.run([CLANG, "--target=aarch64-linux-gnu", "-shared", "-nostdlib", "-fPIC", f"--ld-path={LLD}",
                        str(tmp_path / "s.c"), "-o", str(libdir / lib)], check=True)
    exports = NdkExports.from_sysroot(tmp_path / "sysroot", "aarch64-linux-ohos")
    assert exports.provider("napi_module_register") == "libace_napi.z.so"
    assert exports.provider("OH_LOG_Print") == "libhilog_ndk.z.so"
    assert exports.provider("napi_create_int32") is None
    with pytest.raises(HmbuildError, match="x86_64-linux-ohos/libc.so does not exist"):
        NdkExports.from_sysroot(tmp_path / "sysroot", "x86_64-linux-ohos")


# -- the real reference and the command -----------------------------------------------------------

@needs_public
def test_an_ohos_built_npm_module_passes_as_a_node_api_addon(reference_module, exports):
    report = check_module(reference_module, arch="aarch64", exports=exports, require_arkts_registration=False)
    assert report.ok, "\n".join(report.lines())
    assert report.kind == "Node-API addon"
    assert "registers the Node way (napi_register_module_v1)" in check(report, "registration").detail
    strict = check_module(reference_module, arch="aarch64", exports=exports)
    assert [c.name for c in strict.failed()] == ["registration"]


@needs_public
def test_the_command_reports_and_exits_by_result(reference_module):
    proc = run_hmbuild("ndk-check", str(reference_module), "--ohos-public", str(OHOS_PUBLIC), "--node-addon")
    assert proc.returncode == 0, proc.stderr
    assert "passes the NDK-module check for aarch64 (Node-API addon)" in proc.stdout
    proc = run_hmbuild("ndk-check", str(reference_module), "--ohos-public", str(OHOS_PUBLIC), "--json")
    assert proc.returncode == 1
    report = json.loads(proc.stdout)
    assert report["ok"] is False and report["modules"][0]["kind"] == "Node-API addon"


@pytest.mark.parametrize("what", ["not an ELF file", "missing"])
def test_bad_input_is_one_sentence(tmp_path, what):
    path = tmp_path / "notes.txt"
    if what == "not an ELF file":
        path.write_text("hello\n")
    proc = run_hmbuild("ndk-check", str(path), "--ohos-public", str(OHOS_PUBLIC))
    assert proc.returncode == 1 and proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("hmbuild: error: ") and "Traceback" not in proc.stderr
    assert ("is not an ELF file" if what == "not an ELF file" else "does not exist") in lines[0]


# -- the registration loader (a test double of the ArkTS runtime) ---------------------------------

REGISTERING = """
#include <node_api.h>
static napi_value init(napi_env env, napi_value exports) {
    napi_property_descriptor props[] = {
        {"alpha", 0, 0, 0, 0, 0, napi_default, 0}, {"beta", 0, 0, 0, 0, 0, napi_default, 0}};
    napi_value v;
    napi_create_int32(env, 1, &v);  /* a stub of the double: returns napi_ok */
    napi_define_properties(env, exports, 2, props);
    return exports;
}
static napi_module mod = {1, 0, 0, init, "tiny", 0, {0}};
%(attr)s void register_tiny(void) { napi_module_register(&mod); }
"""


@pytest.fixture(scope="module")
def host_loader(tmp_path_factory, exports):
    from hmbuild.build.registration import build_loader
    from hmbuild.targets.node import napi_headers_dir

    if not CLANG:
        pytest.skip("needs clang-19")
    try:
        headers = napi_headers_dir()
    except HmbuildError as exc:
        pytest.skip(str(exc))
    out = tmp_path_factory.mktemp("loader")
    build_loader([CLANG], out, napi_names=exports.names["libace_napi.z.so"], include_dir=headers)
    return out, headers


@needs_public
@pytest.mark.parametrize("ctor", [True, False])
def test_the_loader_reports_what_a_constructor_registers(tmp_path, host_loader, ctor):
    from hmbuild.build.registration import registration

    loader_dir, headers = host_loader
    src = tmp_path / "tiny.c"
    src.write_text(REGISTERING % {"attr": "__attribute__((constructor))" if ctor else ""})
    lib = tmp_path / "libtiny.so"
    subprocess.run([CLANG, "-shared", "-fPIC", f"-I{headers}", str(src), "-o", str(lib)], check=True)
    if ctor:
        reg = registration(lib, loader_dir)
        assert (reg.modname, reg.functions, reg.registrations) == ("tiny", ("alpha", "beta"), 1)
    else:
        with pytest.raises(HmbuildError, match="no constructor called napi_module_register"):
            registration(lib, loader_dir)
    with pytest.raises(HmbuildError, match="dlopen .* failed"):
        registration(src, loader_dir)
