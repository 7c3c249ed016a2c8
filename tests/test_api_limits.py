"""Each option's range is declared once (api.toml's min/max/integer) and reaches the NAPI glue's C++
constants, Index.d.ts's doc comments and the CLI's click ranges unchanged."""
import re

import click
import pytest

from conftest import REPO
from hmbuild.config import api_schema
from hmbuild.config.api_schema import known_limits, known_symbols, limit, load_api, render_index_dts, render_napi_init
from hmbuild.errors import HmbuildError
from hmbuild.scaffold.generator import new_project

SHIPPED = REPO / "templates/project/api.toml"
NAPI_DIR = REPO / "native/napi"
CPP_LIMIT = re.compile(r"^const OptionLimit (k\w+) = \{([-\d.e+]+), ([-\d.e+]+), (true|false)\};", re.M)
# The CLI options that are also options of the exported API: (command, flag) -> field.
CLI_FIELDS = {("run", "--ctx"): "contextSize", ("run", "--threads"): "threads", ("run", "--max-tokens"): "maxTokens",
              ("run", "--temperature"): "temperature", ("run", "--top-k"): "topK", ("run", "--top-p"): "topP",
              ("run", "--seed"): "seed"}


def shipped():
    symbols = known_symbols(NAPI_DIR)
    api = load_api(SHIPPED, symbols, known_limits(NAPI_DIR))
    return api, render_napi_init(api, "demo", symbols), render_index_dts(api, "demo")


def limited_fields(api):
    return [(i.name, f) for i in api.interfaces for f in i.fields if f.limit]


def test_every_limited_field_has_the_same_range_in_the_glue_and_the_declarations():
    api, cpp, dts = shipped()
    fields = limited_fields(api)
    assert {f"{i}.{f.name}" for i, f in fields} >= {
        "InitOptions.threads", "InitOptions.contextSize", "InitOptions.maxPending", "InitOptions.timeoutMs",
        "InitOptions.memoryBudgetBytes", "InferOptions.maxTokens", "InferOptions.temperature", "InferOptions.topK",
        "InferOptions.topP", "InferOptions.seed", "InferOptions.timeoutMs"}
    constants = {name: (float(lo), float(hi), integer == "true") for name, lo, hi, integer in CPP_LIMIT.findall(cpp)}
    # exactly the constants the runtime's header declares, no more
    assert set(constants) == set(known_limits(NAPI_DIR))
    header = (NAPI_DIR / "hmllm_napi.h").read_text()
    for iface, f in fields:
        const = f"k{iface}{f.name[0].upper()}{f.name[1:]}"
        assert const in header
        assert constants[const] == (f.limit.lo, f.limit.hi, f.limit.integer), const
        lo = int(f.limit.lo) if float(f.limit.lo).is_integer() else f.limit.lo
        hi = int(f.limit.hi) if float(f.limit.hi).is_integer() else f.limit.hi
        expected = f"Range {lo}..{hi}." if f.limit.integer else f"Range {lo}..{hi} (any number)."
        # the field's doc comment (one line or wrapped) ends with the range, right above its declaration
        m = re.search(r"/\*\*((?:(?!\*/).)*)\*/\n  " + re.escape(f.name) + r"\?: number;", dts, re.S)
        assert m, f.name
        comment = " ".join(m.group(1).replace("*", " ").split())
        assert comment.endswith(expected), (f.name, comment)
    # nobody restates a range by hand in the prose any more
    assert "16..131072" not in SHIPPED.read_text() and "1..65536" not in SHIPPED.read_text()


def test_the_runtime_reads_every_option_limit_from_the_generated_constants():
    source = (NAPI_DIR / "hmllm_napi.cpp").read_text()
    calls = re.findall(r"get_(?:int|number)_option\(env, o, \"(\w+)\", ([^,]+),", source)
    assert calls and all(arg.startswith("k") for _, arg in calls), calls
    assert {arg for _, arg in calls} == set(known_limits(NAPI_DIR))


def test_limit_reads_the_template_description():
    api, _, _ = shipped()
    for iface, f in limited_fields(api):
        assert limit(f"{iface}.{f.name}") == f.limit
        assert limit(f.name) == f.limit  # timeoutMs is the same in both interfaces
    with pytest.raises(HmbuildError, match="noSuchOption"):
        limit("noSuchOption")


def test_the_cli_ranges_are_the_descriptions():
    from hmbuild.cli import cli  # the CLI, not a copy of its option table
    for (command, param), field in CLI_FIELDS.items():
        params = {opt: p for p in cli.commands[command].params for opt in p.opts}
        assert param in params, (command, param)
        ptype, lim = params[param].type, limit(field)
        if lim.integer:
            assert isinstance(ptype, click.IntRange), (param, ptype)
        else:
            assert isinstance(ptype, click.FloatRange), (param, ptype)
        assert (ptype.min, ptype.max) == (lim.lo, lim.hi), (param, ptype)


def test_device_class_context_size_follows_the_description(tmp_path):
    from hmbuild.config.settings import validate_device_classes
    row = {"name": "big", "min_total_ram_gb": 8, "model_file": "m.gguf", "kv_cache_type": "f16", "min_available_mb": 0}
    top = int(limit("contextSize").hi)
    assert validate_device_classes([{**row, "context_size": top}], "hmbuild.toml")
    with pytest.raises(HmbuildError, match=f"from 16 to {top}"):
        validate_device_classes([{**row, "context_size": top + 1}], "hmbuild.toml")


BAD_LIMITS = {
    "min above max": ("min = 16, max = 131072", "min = 131072, max = 16", "greater than its `max`"),
    "not a number": ("min = 16, max = 131072", 'min = 16, max = "lots"', "`max` must be a finite number"),
    "only one end": ("min = 16, max = 131072", "min = 16", "needs both `min` and `max`"),
    "not a number field": ('{ name = "stop", type = "string[]", optional = true,',
                           '{ name = "stop", type = "string[]", optional = true, min = 0, max = 16,',
                           "only on number fields"),
    "no limit for a checked option": ("min = 16, max = 131072, integer = true, ", "",
                                      "hmllm_napi::kInitOptionsContextSize"),
}


@pytest.mark.parametrize("case", sorted(BAD_LIMITS))
def test_a_bad_limit_is_one_sentence_naming_the_file_and_field(tmp_path, case):
    old, new, needle = BAD_LIMITS[case]
    root = new_project(tmp_path / "p", name="demo").root
    api = root / "api.toml"
    assert old in api.read_text()
    api.write_text(api.read_text().replace(old, new, 1))
    with pytest.raises(HmbuildError) as err:
        api_schema.write_project_api(root, "demo")
    msg = str(err.value)
    assert "\n" not in msg and msg.endswith(".") and "Traceback" not in msg
    assert needle in msg and str(api) in msg
    if case != "not a number field":
        assert "contextSize" in msg or "ContextSize" in msg
