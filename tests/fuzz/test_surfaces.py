"""The surfaces added since the first fuzz wave, fuzzed with the harness's invariants:
launch command lines, --engine-arg, --engine NAME@VERSION, recommend's length and price
files, environment variables, hostile Hub caches and --plot targets.

Each class these found has its own regression test (tests/cli/test_hostile_*.py,
tests/cli/test_search_bounds.py, tests/cli/test_json_valid.py)."""

from __future__ import annotations

import os
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from tests.cli import test_hostile_paths as layouts
from tests.fuzz import values
from tests.fuzz.harness import fuzz, run

# Numbers as a hostile user writes them, and junk.
number_text = st.one_of(values.edge_values, values.numbers, values.junk)

LAUNCH_FLAGS: dict[tuple[str, ...], list[str]] = {
    ("vllm", "serve", "llama-3.1-8b"): [
        "--max-model-len", "--gpu-memory-utilization", "--max-num-seqs", "--block-size",
        "--max-num-batched-tokens", "--tensor-parallel-size", "--pipeline-parallel-size",
        "--swap-space", "--kv-cache-dtype", "--dtype"],
    ("python", "-m", "sglang.launch_server", "--model-path", "llama-3.1-8b"): [
        "--context-length", "--mem-fraction-static", "--max-running-requests", "--tp",
        "--chunked-prefill-size", "--page-size", "--max-total-tokens"],
    ("trtllm-serve", "llama-3.1-8b"): [
        "--max_batch_size", "--max_num_tokens", "--max_seq_len", "--tp_size",
        "--kv_cache_free_gpu_memory_fraction", "--max_beam_width"],
    ("llama-server", "-m", "llama-3.1-8b"): [
        "-c", "-np", "-b", "-ub", "-ngl", "--n-cpu-moe", "-ctk", "--tensor-split"],
}
ENGINE_KEYS = {
    "vllm": ["gpu_memory_utilization", "max_num_seqs", "enforce_eager", "block_size"],
    "trtllm": ["tokens_per_block", "max_num_tokens", "max_batch_size",
               "free_gpu_memory_fraction", "max_beam_width", "max_tokens"],
    "llamacpp": ["ctx_size", "ubatch_size", "batch_size", "parallel", "n_gpu_layers",
                 "n_cpu_moe", "tensor_split"],
    "sglang": ["mem_fraction_static", "chunked_prefill_size", "page_size"],
}


@fuzz(20)
@given(base=st.sampled_from(sorted(LAUNCH_FLAGS)), data=st.data())
def test_launch_command_lines(base: tuple[str, ...], data: st.DataObject) -> None:
    flags = data.draw(st.lists(st.sampled_from(LAUNCH_FLAGS[base]), min_size=1, max_size=3,
                               unique=True))
    argv = ["launch", "--device", "h100", "--format", "json", "--", *base]
    for flag in flags:
        argv += [flag, data.draw(number_text)]
    run(argv)


@fuzz(20)
@given(engine=st.sampled_from(sorted(ENGINE_KEYS)), data=st.data())
def test_engine_args(engine: str, data: st.DataObject) -> None:
    key = data.draw(st.sampled_from(ENGINE_KEYS[engine]))
    run(["placement", "llama-3.1-8b", "--device", "h100", "--engine", engine, "--limit", "2",
         "--format", "json", "--engine-arg", f"{key}={data.draw(number_text)}"])


@fuzz(15)
@given(engine=st.sampled_from(["vllm", "sglang", "trtllm", "llamacpp", "ik_llama"]),
       version=st.one_of(number_text, st.integers(0, 10**6).map(str),
                         st.sampled_from(["1" + "9" * 5000, "0." + "1" * 50, "b" * 3])))
def test_engine_versions(engine: str, version: str) -> None:
    run(["engines", f"{engine}@{version}"])


bins = st.lists(st.tuples(number_text, number_text, number_text), min_size=1, max_size=4)


@fuzz(15)
@given(rows=bins, csv=st.booleans(), rate=number_text)
def test_recommend_length_files_and_rates(tmp_path_factory: object, rows: list[tuple[str, str,
                                          str]], csv: bool, rate: str) -> None:
    folder = Path(os.environ.get("TMPDIR", "/tmp"))
    path = folder / f"inventory-fuzz-lengths-{os.getpid()}.{'csv' if csv else 'yaml'}"
    if csv:
        text = "isl,osl,weight\n" + "".join(f"{a},{b},{c}\n" for a, b, c in rows)
    else:
        text = "".join(f"- {{isl: {a!r}, osl: {b!r}, weight: {c!r}}}\n" for a, b, c in rows)
    try:
        path.write_text(text, errors="surrogatepass")
    except (UnicodeError, ValueError):
        return
    try:
        run(["recommend", "llama-3.1-8b", "--device", "h100", "--lengths", str(path),
             "--qps", rate, "--format", "json"])
    finally:
        path.unlink(missing_ok=True)


@fuzz(10)
@given(price=number_text, spot=number_text)
def test_price_files(price: str, spot: str) -> None:
    path = Path(os.environ.get("TMPDIR", "/tmp")) / f"inventory-fuzz-prices-{os.getpid()}.yaml"
    try:
        path.write_text("prices:\n- {device: h100-sxm, provider: me, offer: x, on_demand: "
                        f"{price!r}, spot: {spot!r}, as_of: '2025-01-01', source: me}}\n",
                        errors="surrogatepass")
    except (UnicodeError, ValueError):
        return
    try:
        run(["recommend", "llama-3.1-8b", "--device", "h100", "--isl", "100", "--osl", "100",
             "--qps", "1", "--prices", str(path), "--provider", "me", "--format", "json"])
    finally:
        path.unlink(missing_ok=True)


@fuzz(10)
@given(columns=number_text)
def test_columns_from_the_environment(columns: str) -> None:
    if "\x00" in columns:
        return  # no environment can hold a NUL
    saved = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = columns.encode("utf-8", "surrogateescape").decode("utf-8",
                                                                                "replace")
    try:
        run(["kv", "--layers", "8", "--tokens", "100"])
    finally:
        if saved is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = saved


@fuzz(12)
@given(layout=st.sampled_from(layouts.LAYOUTS), command=st.sampled_from(sorted(
    layouts.COMMANDS)))
def test_hostile_hub_caches(layout: object, command: str) -> None:
    import shutil
    import tempfile

    root = Path(tempfile.mkdtemp(prefix="inventory-fuzz-hub-"))
    saved = {k: os.environ.get(k) for k in ("HF_HUB_CACHE", "HF_HUB_OFFLINE")}
    try:
        cache, outside = root / "hub", root / "elsewhere"
        outside.mkdir()
        folder = layouts._repo(cache, "m")
        layout(folder, outside)  # type: ignore[operator]
        os.environ.update(HF_HUB_CACHE=str(cache), HF_HUB_OFFLINE="1")
        outcome = run([a.format(name="m", folder=folder) for a in layouts.COMMANDS[command]])
        assert outcome.code == 2, outcome
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        shutil.rmtree(root, ignore_errors=True)


@fuzz(4)
@given(target=st.sampled_from(["/dev/full", "/", "/nonexistent/x.svg", "x" * 300 + ".svg",
                               "/proc/self/x.png", "chart.txt"]))
def test_plot_targets(target: str) -> None:
    outcome = run(["placement", "llama-3.1-8b", "--device", "h100", "--limit", "1",
                   "--plot", target])
    assert outcome.code == 2, outcome
