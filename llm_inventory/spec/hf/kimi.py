"""Kimi-K2.5 (transformers `models/kimi_k25`, `Kimi_K25ForConditionalGeneration`): a
MoonViT tower, a patch-merging projector and a DeepSeek-V3 language model (Kimi-K2's).

Kimi-K2 itself (`model_type` kimi_k2) has no transformers class: its config names
`DeepseekV3ForCausalLM`, and it is read by that class's builder, as transformers (via
`architectures`) and vLLM do."""

from __future__ import annotations

from typing import Any

from llm_inventory.errors import InputError, excerpt
from llm_inventory.spec.hf import HFConfig, registry
from llm_inventory.spec.hf.common import extra, linear, norm, sub_config, vlm_model
from llm_inventory.spec.hf.vision import vit
from llm_inventory.spec.model import Encoder, Media, ModelSpec, Shard

# The checkpoint's own config names for the tower's shapes (Moonshot's MoonViT code); the
# transformers class reads its own names and falls back to its defaults without them.
_VT_NAMES = {"hidden_size": "vt_hidden_size", "num_hidden_layers": "vt_num_hidden_layers",
             "intermediate_size": "vt_intermediate_size",
             "num_attention_heads": "vt_num_attention_heads",
             "pos_emb_height": "init_pos_emb_height", "pos_emb_width": "init_pos_emb_width"}


def _vision(c: HFConfig) -> HFConfig:
    """The tower's config: a transformers key where the file gives one, else the
    checkpoint's own name for it (`vt_hidden_size` …), else the class default."""
    _, v = sub_config(c, "vision_config", "kimi_k25_vision")
    data: dict[str, Any] = dict(v.data)
    for key, own in _VT_NAMES.items():
        if key not in c.sub("vision_config").data and own in data:
            data[key] = v.raw(own)
    # vLLM's MoonVision3dPatchEmbed (vllm/model_executor/models/kimi_k25_vit.py) builds only
    # this position embedding (a learned grid; the temporal table is a fixed buffer) and
    # the projector only as this patch merger.
    for key, only in (("pos_emb_type", "divided_fixed"), ("mm_projector_type", "patchmerger")):
        if v.raw(key) not in (None, only):
            raise InputError(f"{v.label}: {key}", f"must be {only!r} for kimi_k25, got "
                             f"{excerpt(v.raw(key))}")
    return HFConfig(data, v.label, v.name, defaults=v.defaults)


def kimi_k25(c: HFConfig) -> ModelSpec:
    """Kimi-K2.5: MoonViT (patch conv with bias, a learned pos_emb_height × pos_emb_width
    grid, LayerNorm pre-norm blocks with biased q/k/v/proj and a plain MLP, 2-D rotary, a
    final LayerNorm), then `Kimi_K25MultimodalProjection`: LayerNorm over each merged patch,
    Linear(m × hidden, m × hidden), GELU, Linear(m × hidden, text hidden), m the merge
    kernel's patches. A `kimi_k2` text_config is read as DeepSeek-V3 (`Kimi_K25Config`
    does the same)."""
    raw = c.sub("text_config").raw("model_type")
    # sub_config refuses a model_type that is not a name; the registry, one it cannot read
    kind, text = sub_config(c, "text_config", "deepseek_v3" if raw in (None, "kimi_k2") else raw)
    if not registry.is_text_model(kind):
        raise InputError(f"{text.label}: model_type",
                         f"unsupported language model {kind!r} in a {c.raw('model_type')} "
                         "config")
    language = registry.builder(kind)(text)
    decoder = language.decoder
    assert decoder is not None
    v = _vision(c)
    hidden, patch = v.integer("hidden_size"), v.integer("patch_size")
    kernel = v.int_list("merge_kernel_size") or [2, 2]
    if len(kernel) != 2 or 0 in kernel:
        raise InputError(f"{v.label}: merge_kernel_size",
                         f"must be two positive integers, got {excerpt(kernel)}")
    merge = kernel[0] * kernel[1]
    stem = [extra("patch_embed.proj.weight", [hidden, 3, patch, patch]),
            extra("patch_embed.proj.bias", [hidden]),
            extra("patch_embed.pos_emb.position_embeddings",
                  [v.integer("pos_emb_height"), v.integer("pos_emb_width"), hidden])]
    tower = vit(v, rope=True, extra=stem)
    # The projector's input and output widths, where the checkpoint's config names them
    # (`KimiK25PatchMergerMLP`: mm_hidden_size, else the tower's width), must be the tower's
    # and the language model's.
    out = decoder.hidden_size or 0
    for key, width in (("mm_hidden_size", hidden), ("text_hidden_size", out)):
        given = v.opt_integer(key)
        if given is not None and given != width:
            raise InputError(f"{v.label}: {key}", f"must be {width}, the width it joins")
    width = hidden * merge
    projector = (norm("mm_projector.pre_norm", c.integer("projection_hidden_size"), bias=True)
                 + linear("mm_projector.in_proj", width, width, shard=Shard.COLUMN)
                 + linear("mm_projector.out_proj", out, width, shard=Shard.ROW))
    # Images run at native resolution; the learned grid's size stands for one
    # (64 × 14 = 896 px: 4,096 patches, 1,024 tokens after the 2 × 2 merge).
    side = v.integer("pos_emb_height") * patch
    media = Media(image_size=side, patch_size=patch, spatial_merge_size=kernel[0])
    encoder = Encoder(kind="vision", stack=tower, media=media, projector=projector)
    tied = c.flag("tie_word_embeddings")
    spec = vlm_model(c, decoder.model_copy(update={"tied_embeddings": tied}), encoder, text,
                     notes=language.notes)
    if spec.quantization is None and language.quantization is not None:
        # Kimi-K2.5 keeps its quantization_config (INT4 experts) in text_config.
        spec = spec.model_copy(update={"quantization": language.quantization})
    return spec
