"""One description of the exported API (api.toml) -> the NAPI property table and Index.d.ts."""
import json
import os
import re
from pathlib import Path

import pytest

from conftest import REPO, run_hmbuild
from hmbuild.config import api_schema
from hmbuild.config.api_schema import known_symbols, load_api, render_index_dts, render_napi_init, write_project_api
from hmbuild.errors import HmbuildError
from hmbuild.scaffold.generator import new_project
from hmbuild.config.project import load_project

SHIPPED = REPO / "templates/project/api.toml"
NAPI_DIR = REPO / "native/napi"
CPP_ENTRY = re.compile(r'\{"(\w+)", nullptr, hmllm_napi::(\w+),')
DTS_EXPORT = re.compile(r"^export (?:const|function) (\w+)\b", re.M)


def header_symbols() -> set[str]:
    """What the runtime's NAPI headers declare, read independently of api_schema's parser."""
    text = "".join(p.read_text() for p in NAPI_DIR.glob("*.h"))
    return set(re.findall(r"^napi_value (\w+)\(napi_env env, napi_callback_info info\);", text, re.M))


def render(path: Path, name: str = "demo"):
    symbols = known_symbols(NAPI_DIR)
    api = load_api(path, symbols)
    return render_napi_init(api, name, symbols), render_index_dts(api, name)


def one_sentence(err: HmbuildError) -> str:
    msg = str(err)
    assert "\n" not in msg and msg.endswith(".") and "Traceback" not in msg
    return msg


def test_shipped_description_renders_exactly_what_the_napi_layer_exports():
    cpp, dts = render(SHIPPED)
    entries = CPP_ENTRY.findall(cpp)
    cpp_names = [n for n, _ in entries]
    dts_names = list(dict.fromkeys(DTS_EXPORT.findall(dts)))  # overloads repeat a name
    assert cpp_names == dts_names
    assert {"init", "inferAsync", "classifyAsync", "warmup", "cancel", "release", "stats"} <= set(cpp_names)
    # every runtime function is exported, and nothing else is bound
    assert {sym for _, sym in entries} == header_symbols()
    assert known_symbols(NAPI_DIR).keys() == header_symbols()
    for header in {api_schema.known_symbols(NAPI_DIR)[s] for _, s in entries}:
        assert f'#include "{header}"' in cpp
    assert ("verifyModel", "VerifyModelAsync") in entries
    assert '"demo",  // nm_modname' in cpp and "void RegisterDemoModule()" in cpp


def test_shipped_description_keeps_the_hand_written_declarations_and_docs():
    _, dts = render(SHIPPED)
    for line in (
        "export interface NativeError extends Error {",
        "  kvCacheType?: 'f16' | 'q8_0';",
        "  /** Each piece of text as it is generated, in order; the pieces concatenate to the result. */",
        "  onToken?: (piece: string) => void;",
        "  degraded: 'none' | 'timeout' | 'cancelled';",
        "/** Maps a GGUF model (weights stay in the read-only mapping) and returns a session id. */",
        "export const init: (modelPath: string, options?: InitOptions) => number;",
        "export function inferAsync(session: number, input: ArrayBuffer, options?: InferOptions): Promise<ArrayBuffer>;",
        "export function inferAsync(session: number, input: ArrayBuffer, options: InferOptions,\n"
        "                           callback: (result: ArrayBuffer, error?: NativeError) => void): void;",
        "export const classifyAsync: (session: number, input: ArrayBuffer, labels: string[],\n"
        "                             options?: ClassifyOptions) => Promise<ClassifyResult>;",
        "export const warmup: (session: number) => Promise<void>;",
        "export const stats: (session: number) => SessionStats;",
        "export const verifyModel: (path: string, sha256: string) => Promise<boolean>;",
        "export const chatAsync: (session: number, messages: ChatMessage[], options?: InferOptions) => Promise<ChatResult>;",
        "  role: 'system' | 'user' | 'assistant';",
        "  chatFormat?: string;",
        "  promptTokens?: number;",
    ):
        assert line in dts, line
    assert "Declarations of libdemo.so's NAPI exports" in dts
    assert "OUT_OF_MEMORY (over memoryBudgetBytes)" in dts


def test_a_changed_description_changes_both_outputs(tmp_path):
    text = SHIPPED.read_text()
    text = text.replace(
        '  { name = "seed", type = "number", optional = true, min = 0, max = 9007199254740991, integer = true },\n',
        '  { name = "seed", type = "number", optional = true, min = 0, max = 9007199254740991, integer = true },\n'
        '  { name = "repeatPenalty", type = "number", optional = true, doc = "Above 1: fewer repeats." },\n')
    text = text.replace('doc = "0 (default): greedy."', 'doc = "Zero (the default) samples greedily."')
    text += ('\n[[function]]\nname = "dispose"\nsymbol = "Release"\ndoc = "Another name for release()."\n'
             'params = [{ name = "session", type = "number" }]\nreturns = "void"\n')
    changed = tmp_path / "api.toml"
    changed.write_text(text)
    cpp0, dts0 = render(SHIPPED)
    cpp, dts = render(changed)
    assert '{"dispose", nullptr, hmllm_napi::Release,' in cpp and "dispose" not in cpp0
    assert "/** Another name for release(). */\nexport const dispose: (session: number) => void;" in dts
    assert "  /** Above 1: fewer repeats. */\n  repeatPenalty?: number;" in dts and "repeatPenalty" not in dts0
    assert "/** Zero (the default) samples greedily. Range" in dts and "0 (default): greedy." not in dts
    assert CPP_ENTRY.findall(cpp)[-1] == ("dispose", "Release")


BAD = {
    "unsupported type": ('{ name = "topK", type = "number", optional = true, min',
                         '{ name = "topK", type = "Map<string, number>", optional = true, min', "Map"),
    "unknown interface": ('returns = "SessionStats"', 'returns = "SessionStatz"', "SessionStatz"),
    "non-literal union": ('{ name = "label", type = "string", doc', '{ name = "label", type = "string | number", doc',
                          "string literals"),
    "void field": ('{ name = "label", type = "string", doc', '{ name = "label", type = "void", doc', "void"),
    "unknown symbol": ('symbol = "Warmup"', 'symbol = "WarmUp"', "hmllm_napi::WarmUp"),
    "duplicate function": ('name = "cancel"', 'name = "release"', "'release' is declared twice"),
    "duplicate interface": ('name = "SessionStats"', 'name = "InitOptions"', "'InitOptions' is declared twice"),
    "duplicate field": ('{ name = "topP", type', '{ name = "topK", type', "'topK' is declared twice"),
    "misspelt key": ('{ name = "seed", type = "number", optional = true,',
                     '{ name = "seed", type = "number", optinal = true,', "optinal"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_a_bad_description_is_refused_with_one_sentence_and_nothing_is_written(tmp_path, case):
    old, new, needle = BAD[case]
    root = new_project(tmp_path / "p", name="demo").root
    api = root / "api.toml"
    assert old in api.read_text()
    api.write_text(api.read_text().replace(old, new, 1))
    outputs = [root / "src/main/cpp/napi_init.cpp", root / "src/main/cpp/types/libdemo/Index.d.ts"]
    for p in outputs:
        p.write_text("// sentinel\n")
    with pytest.raises(HmbuildError) as err:
        write_project_api(root, "demo")
    msg = one_sentence(err.value)
    assert needle in msg and "api.toml" in msg
    assert all(p.read_text() == "// sentinel\n" for p in outputs)


def test_type_grammar_is_closed_and_canonical():
    ifaces = {"Opts"}
    assert api_schema.parse_type("Promise< string[] >", ifaces) == "Promise<string[]>"
    assert api_schema.parse_type("'a'|'b'", ifaces) == "'a' | 'b'"
    assert api_schema.parse_type("(x:number,cb?:(e:Opts)=>void)=>Promise<void>", ifaces, allow_void=True) == \
        "(x: number, cb?: (e: Opts) => void) => Promise<void>"
    for bad in ("any", "object", "Promise<number", "number | string", "Record<string, number>", "Opts[][", ""):
        with pytest.raises(api_schema._Invalid):
            api_schema.parse_type(bad, ifaces)


def test_generated_project_carries_the_description_and_regenerates(tmp_path):
    root = new_project(tmp_path / "p", name="notes_llm").root
    settings = load_project(root).settings
    assert settings["project"]["api"] == "api.toml" and (root / "api.toml").is_file()
    assert not (root / "api.toml.j2").exists()
    results = write_project_api(root, "notes_llm")
    assert [r.state for r in results] == ["unchanged", "unchanged"]
    assert [r.path for r in results] == ["src/main/cpp/napi_init.cpp", "src/main/cpp/types/libnotes_llm/Index.d.ts"]


def test_api_check_detects_a_hand_edit_and_api_repairs_it(tmp_path):
    run_hmbuild("new", str(tmp_path / "p"), "--name", "demo", check=True)
    root = tmp_path / "p"
    proc = run_hmbuild("-C", str(root), "api", "--check", "--json")
    assert proc.returncode == 0, proc.stderr
    assert {f["state"] for f in json.loads(proc.stdout)["files"]} == {"unchanged"}

    dts = root / "src/main/cpp/types/libdemo/Index.d.ts"
    dts.write_text(dts.read_text().replace("threads?: number;", "threads?: string;"))
    proc = run_hmbuild("-C", str(root), "api", "--check")
    assert proc.returncode != 0
    errors = [l for l in proc.stderr.splitlines() if l.startswith("hmbuild: error:")]
    assert len(errors) == 1 and "Index.d.ts" in errors[0] and "napi_init.cpp" not in errors[0]
    assert "threads?: string;" in dts.read_text()  # --check writes nothing

    proc = run_hmbuild("-C", str(root), "api")
    assert proc.returncode == 0 and "Index.d.ts: written" in proc.stdout
    assert run_hmbuild("-C", str(root), "api", "--check").returncode == 0


def test_a_bad_description_through_the_cli_is_one_json_error(tmp_path):
    run_hmbuild("new", str(tmp_path / "p"), "--name", "demo", check=True)
    api = tmp_path / "p/api.toml"
    api.write_text(api.read_text().replace('symbol = "Stats"', 'symbol = "Statistics"'))
    proc = run_hmbuild("-C", str(tmp_path / "p"), "api", "--json")
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    out = json.loads(proc.stdout)
    assert out["ok"] is False and "hmllm_napi::Statistics" in out["error"]


def test_build_regenerates_only_when_the_description_is_newer(tmp_path):
    root = new_project(tmp_path / "p", name="demo").root
    project = load_project(root)
    cpp = root / "src/main/cpp/napi_init.cpp"
    assert api_schema.regenerate_if_stale(project) == []

    api = root / "api.toml"
    api.write_text(api.read_text().replace('name = "warmup"', 'name = "warmUp"'))
    later = cpp.stat().st_mtime + 5
    os.utime(api, (later, later))
    states = {r.path: r.state for r in api_schema.regenerate_if_stale(project)}
    assert states["src/main/cpp/napi_init.cpp"] == "written" and '{"warmUp",' in cpp.read_text()

    # a hand edit made after the description is not overwritten by a build
    cpp.write_text(cpp.read_text() + "// mine\n")
    os.utime(cpp, (later + 5, later + 5))
    assert "src/main/cpp/napi_init.cpp" not in {r.path for r in api_schema.regenerate_if_stale(project)}
    assert cpp.read_text().endswith("// mine\n")
