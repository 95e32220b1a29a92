"""`inventory kv`: persistent-state (KV cache and friends) sizing."""

# No `from __future__ import annotations` here: Typer reads the option annotations on every
# run, and objects built once at import cost it far less than strings it must evaluate
# (0.7 ms against 3.2 ms for this command; `kv` is the command scripts call in loops).

from typing import Annotated, Any

import typer

from llm_inventory.cli import complete
from llm_inventory.cli.common import (
    FormatOption,
    FramesOption,
    ImageSizeOption,
    ImagesOption,
    MergeOption,
    PatchOption,
    TemporalOption,
    UnitsOption,
    WeightDtypeRefused,
    bytes_parser,
    parse_image_size,
    refuse_weight_dtype,
    tokens_parser,
    units_of,
)
from llm_inventory.render.output import OutputFormat, Units


def kv(
    model: Annotated[
        str | None,
        typer.Option(
            "--model", "-m", metavar="MODEL", autocompletion=complete.models,
            help="Take the layers from a model: a preset, a Hugging Face id (org/name), a YAML "
                 "file, a config.json, a model or Hub cache folder, or a GGUF file.",
        ),
    ] = None,
    layers: Annotated[
        int | None,
        typer.Option(min=1, help="Decoder layers that keep KV (default 80, or the model's)."),
    ] = None,
    tokens: Annotated[
        int,
        typer.Option(
            parser=tokens_parser("tokens"), metavar="TOKENS",
            help="Tokens per sequence: 8000, 8k (=8,000), 8K (=8,192), 128K, 1M.",
        ),
    ] = "8000",  # type: ignore[assignment]
    kv_heads: Annotated[int | None, typer.Option(min=1, help="KV heads per layer (8).")] = None,
    head_dim: Annotated[
        int | None, typer.Option(min=1, help="Key head dimension (128).")
    ] = None,
    v_head_dim: Annotated[
        int | None, typer.Option(min=1, help="Value head dimension, if it differs from K's.")
    ] = None,
    kv_dtype: Annotated[
        str | None,
        typer.Option(
            "--kv-dtype", autocompletion=complete.dtypes,
            help="KV cache dtype: bf16 (default; a model's own dtype), fp16, fp8, fp32…",
        ),
    ] = None,
    weight_dtype: WeightDtypeRefused = None,
    sequences: Annotated[int, typer.Option(min=1, help="Concurrent sequences.")] = 1,
    tp: Annotated[int, typer.Option(min=1, help="Tensor-parallel degree.")] = 1,
    pp: Annotated[int, typer.Option(min=1, help="Pipeline-parallel degree.")] = 1,
    window: Annotated[
        int | None, typer.Option(min=1, help="Sliding window: hold at most W tokens per layer.")
    ] = None,
    chunk: Annotated[
        int | None, typer.Option(min=1, help="Chunked attention: hold at most C tokens.")
    ] = None,
    latent: Annotated[
        int | None,
        typer.Option(min=1, help="MLA: latent width (kv_lora_rank + rope dim), e.g. 576."),
    ] = None,
    block_size: Annotated[
        int | None, typer.Option(min=1, help="Paged cache: round each sequence up to blocks.")
    ] = None,
    max_bytes: Annotated[
        int | None,
        typer.Option(
            parser=bytes_parser("max_bytes"), metavar="SIZE",
            help="Exit 1 when one device's share exceeds SIZE (80GiB, 141GB, bytes).",
        ),
    ] = None,
    images: ImagesOption = 0,
    image_size: ImageSizeOption = None,
    patch: PatchOption = None,
    merge: MergeOption = None,
    frames: FramesOption = 1,
    temporal_patch: TemporalOption = None,
    fmt: FormatOption = OutputFormat.TABLE,
    units: UnitsOption = Units.IEC,
) -> None:
    """Size the KV cache (and other persistent state) of a decoder.

    Defaults are the dense decoder of the worked example: 80 layers, 8 KV heads, head
    dimension 128, BF16, 8,000 tokens. With --model the layers (and their kinds: sliding
    windows, MLA latents, Mamba state, cross-attention) come from the model, and --images
    adds the feature tokens a vision encoder produces (in the context, or as cross-attention
    state for models that read media through cross-attention).

    Example: inventory kv --layers 80 --tokens 8000 --tp 4
    """
    from llm_inventory.errors import CheckFailed, InputError
    from llm_inventory.render.output import emit
    from llm_inventory.units import format_bytes

    refuse_weight_dtype(weight_dtype, "kv", "--kv-dtype", "the KV cache")
    if kv_dtype is not None:
        from llm_inventory.units import normalize_dtype

        kv_dtype = normalize_dtype(kv_dtype, "kv_dtype")
    shape_flags = {"layers": layers, "kv_heads": kv_heads, "head_dim": head_dim,
                   "v_head_dim": v_head_dim, "window": window, "chunk": chunk, "latent": latent}
    if model is not None:
        given = [name for name, value in shape_flags.items() if value is not None]
        if given:
            raise InputError(given[0], "describes the layers itself; it cannot be combined "
                             "with --model")
        from llm_inventory.engine import kinds
        from llm_inventory.engine.kinds.uniform import STATE_BASIS
        from llm_inventory.engine.model_state import state_layers
        from llm_inventory.engine.state import StateRequest, size_state
        from llm_inventory.engine.trust import counted_state
        from llm_inventory.spec.loader import load_model

        spec = load_model(model)
        media = spec.encoder.media if spec.encoder is not None else None
        decoder = spec.decoder
        cross = decoder is not None and kinds.reads_encoder(decoder)
        media_tokens = 0
        pixels = parse_image_size(image_size)
        if images or pixels or patch:
            if media is None or not spec.family.decodes:
                raise InputError("images", f"{spec.name} has no media encoder")
            from llm_inventory.engine.media import feature_tokens

            geometry = feature_tokens(
                media, width=pixels[0] if pixels else None,
                height=pixels[1] if pixels else None, frames=frames,
                patch_size=patch, merge=merge, temporal_patch=temporal_patch)
            media_tokens = geometry.feature_tokens * max(images, 1)
        encoder_tokens = 0
        if cross and media is not None:
            from llm_inventory.engine.media import feature_tokens as item_tokens

            encoder_tokens = media_tokens or (
                media.tokens_per_item or item_tokens(media).feature_tokens)
        if not cross:
            tokens += media_tokens
        stack = state_layers(spec, encoder_tokens=encoder_tokens)
        if not stack:
            if spec.coarse is not None and spec.family.decodes:
                why = spec.notes[0] if spec.notes else "only totals are known"
                raise InputError("model", f"{spec.name}: its layer shapes are unknown ({why}); "
                                 "give the shape flags instead of --model")
            raise InputError("model", f"{spec.name} ({spec.family}) keeps no per-sequence "
                             "state: it has no decode loop")
        kv_dtype = kv_dtype or spec.dtype
        result: Any = size_state(StateRequest(
            layers=stack, tokens=tokens, sequences=sequences, dtype=kv_dtype,
            block_size=block_size, tp=tp, pp=pp,
        )).model_copy(update={"exact": spec.exact, "estimated": spec.estimated,
                              "trust": {"state": counted_state(spec, STATE_BASIS)}})
    else:
        if images or image_size or patch:
            raise InputError("images", "media need a model with an encoder: add --model")
        chosen = [n for n in ("window", "chunk", "latent") if shape_flags[n] is not None]
        if len(chosen) > 1:
            raise InputError(chosen[1], f"choose one of --window, --chunk, --latent, not "
                             f"{chosen}")
        if latent is not None:
            kind, size = "mla", None
        elif chunk is not None:
            kind, size = "chunked", chunk
        elif window is not None:
            kind, size = "sliding", window
        else:
            kind, size = "full", None

        def uniform(fast: bool) -> Any:
            return _uniform(kind, 80 if layers is None else layers,
                            kv_heads=8 if kv_heads is None else kv_heads,
                            k_head_dim=128 if head_dim is None else head_dim,
                            v_head_dim=v_head_dim, window=size, latent_dim=latent or 0,
                            tokens=tokens, sequences=sequences, dtype=kv_dtype or "bf16",
                            block_size=block_size, tp=tp, pp=pp, fast=fast)

        result = uniform(fast=True)

    def table() -> list[Any]:
        from llm_inventory.render.state import state_tables

        engine_result = uniform(fast=False) if isinstance(result, dict) else result
        return state_tables(engine_result, units_of(units))

    def plain(stream: Any) -> str | None:
        if not isinstance(result, dict):
            return None
        from llm_inventory.render.state import plain_state

        return plain_state(result, units_of(units), stream)

    emit(result, fmt, table, plain)
    device_bytes = (result["per_device"]["bytes"] if isinstance(result, dict)
                    else result.per_device.bytes)
    if max_bytes is not None and device_bytes > max_bytes:
        system = units_of(units)
        raise CheckFailed(
            f"--max-bytes: one device holds {device_bytes:,} B "
            f"({format_bytes(device_bytes, system)}), over the limit of "
            f"{max_bytes:,} B ({format_bytes(max_bytes, system)})"
        )
    if model is None and all(value is None for value in shape_flags.values()):
        from llm_inventory.render.output import note

        note("no --model and no shape flags: sizing the worked example's dense decoder "
             "(80 layers, 8 KV heads, head dimension 128); give --model or --layers, "
             "--kv-heads, --head-dim")


def _uniform(kind: str, layers: int, *, kv_heads: int, k_head_dim: int, v_head_dim: int | None,
             window: int | None, latent_dim: int, tokens: int, sequences: int, dtype: str,
             block_size: int | None, tp: int, pp: int, fast: bool) -> Any:
    """The state of a stack of identical layers. `fast`: the JSON form straight from
    `engine/kinds/uniform.py` (no pydantic, no kind modules: a script calling `kv` in a loop
    pays for Typer and little else), printed as it is or as a table by `plain_state`; any
    input that path leaves to the engine, and a table Rich must print, get the engine's
    `StateResult`."""
    v_dim = k_head_dim if v_head_dim is None else v_head_dim
    if fast:
        from llm_inventory.engine.kinds.uniform import uniform_state

        found = uniform_state(kind, layers, kv_heads=kv_heads, k_head_dim=k_head_dim,
                              v_head_dim=v_dim, window=window, latent_dim=latent_dim,
                              tokens=tokens, sequences=sequences, dtype=dtype,
                              block_size=block_size, tp=tp, pp=pp)
        if found is not None:
            return found
    from llm_inventory.engine.state import StateRequest, size_state, uniform_layers

    stack = uniform_layers(kind, layers, kv_heads=kv_heads, head_dim=k_head_dim,
                           v_head_dim=v_head_dim, window=window, latent_dim=latent_dim)
    return size_state(StateRequest(layers=stack, tokens=tokens, sequences=sequences,
                                   dtype=dtype, block_size=block_size, tp=tp, pp=pp))
