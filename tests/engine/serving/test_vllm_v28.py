

def test_prefix_caching_is_on_by_default_for_hybrid_models_from_0_28() -> None:
    """vllm#50991 (v0.28.0): hybrid models cache prefixes unless told not to, their state
    groups keeping two blocks per request (mode align); 0.27 left them off."""
    import shlex

    from llm_inventory.engine.launch import match_program, predict_launch
    from llm_inventory.engine.serving import get
    from llm_inventory.spec.devices import resolve_device
    from llm_inventory.spec.presets import load_preset

    def concurrency(version: str, extra: str) -> float:
        era, rest = match_program(shlex.split(
            f"vllm serve qwen3.5-27b --max-model-len 8000 {extra}"))
        command = era.parse_launch(rest)
        plan = predict_launch(load_preset("qwen3.5-27b"), command, get(f"vllm@{version}"),
                              resolve_device("h100")).plan
        assert plan.max_concurrency is not None
        return plan.max_concurrency

    on, off = "--enable-prefix-caching", "--no-enable-prefix-caching"
    assert concurrency("0.28", "") == concurrency("0.28", on) < concurrency("0.28", off)
    assert concurrency("0.33", "") == concurrency("0.33", on)
    assert concurrency("0.27", "") == concurrency("0.27", off) > concurrency("0.27", on)
