"""Ling 3 (transformers 5.25 `models/bailing_hybrid`, `BailingHybridForCausalLM`): Kimi Delta
Attention in most layers and DeepSeek-V3's multi-head latent attention with a per-head
output gate in the last layer of each group, DeepSeek-V3's routed and shared experts after
`first_k_dense_replace` dense layers."""

from __future__ import annotations

from llm_inventory.errors import InputError
from llm_inventory.spec.hf import HFConfig
from llm_inventory.spec.hf.common import extra, hf_model
from llm_inventory.spec.model import (
    MLA,
    Component,
    Family,
    LayerKind,
    LinearAttention,
    ModelSpec,
    MoE,
    Shard,
    Stack,
)

_KINDS = {"full_attention": LayerKind.MLA, "linear_attention": LayerKind.KDA}


def _layer_kinds(c: HFConfig, layers: int, notes: list[str]) -> list[str]:
    """`layer_types`, else MLA on every layer i with (i + 1) % layer_group_size == 0 and
    KDA elsewhere (`BailingHybridConfig.__post_init__`). vLLM also makes the layers of a
    trailing partial group MLA (`_is_kda_layer`, vllm/model_executor/models/
    bailing_moe_v3.py); transformers does not, and the count follows transformers."""
    names = c.str_list("layer_types")
    if names is None:
        group = c.integer("layer_group_size")
        names = ["full_attention" if (i + 1) % group == 0 else "linear_attention"
                 for i in range(layers)]
        if layers % group:
            notes.append(f"the last {layers % group} layer(s) do not fill a group of "
                         f"{group}: transformers builds them as KDA, vLLM's Ling 3 model "
                         "(bailing_moe_v3.py) as MLA; the count and state follow "
                         "transformers")
    else:
        c.superseded("layer_group_size")
    if len(names) != layers or set(names) - set(_KINDS):
        raise InputError(f"{c.label}: layer_types", f"needs {layers} entries of "
                         "full_attention or linear_attention")
    return [_KINDS[n] for n in names]


def _moe_layers(c: HFConfig, layers: int) -> list[int]:
    """`mlp_layer_types` ("sparse" layers), else every layer from first_k_dense_replace."""
    names = c.str_list("mlp_layer_types")
    if names is None:
        first = c.integer("first_k_dense_replace", minimum=0)
        return list(range(first, layers))
    c.superseded("first_k_dense_replace")
    if len(names) != layers or set(names) - {"dense", "sparse"}:
        raise InputError(f"{c.label}: mlp_layer_types",
                         f"needs {layers} entries of dense or sparse")
    return [i for i, name in enumerate(names) if name == "sparse"]


def _linear_attention(c: HFConfig, heads: int) -> LinearAttention:
    """`BailingHybridDeltaAttention` (GLM-5.3's KDA with a full-rank forget gate `f_proj`
    and a full-rank output gate `g_proj`): linear_num_heads, linear_head_dim and
    linear_conv_kernel_dim where the file gives them, else what `__post_init__` sets them
    from: num_attention_heads, head_dim and short_conv_kernel_size."""

    def read(own: str, source: str) -> int:
        if c.has(own):
            c.superseded(source)
            return c.integer(own)
        return c.integer(source)

    return LinearAttention(
        key_heads=c.integer("linear_num_heads") if c.has("linear_num_heads") else heads,
        key_head_dim=read("linear_head_dim", "head_dim"),
        conv_kernel=read("linear_conv_kernel_dim", "short_conv_kernel_size"),
        full_rank_gate=True, full_rank_forget_gate=True,
        # KDA's recurrent state is fp32 (transformers casts it; vLLM kda_state_dtype); the
        # conv window is kept at the model dtype (transformers' LinearAttentionLayer).
        state_dtype="fp32", conv_dtype=c.dtype)


def bailing_hybrid(c: HFConfig) -> ModelSpec:
    """`BailingHybridForCausalLM`:

    - KDA layers (`BailingHybridDeltaAttention`) where `layer_types` says
      "linear_attention"; the others `BailingHybridAttention`, DeepSeek-V3's MLA (one full
      `q_proj` when `q_lora_rank` is null, query LoRA otherwise; rotary in the latent) with
      `g_proj`, a sigmoid gate per head (hidden → heads, no bias);
    - `BailingHybridMoE` on "sparse" `mlp_layer_types` layers: DeepSeek-V3's router (a weight;
      the correction bias is a buffer), routed experts of `moe_intermediate_size` and one
      shared MLP of num_shared_experts × moe_intermediate_size; a dense MLP of
      `intermediate_size` on the others;
    - an output head that is never tied: the class's `_tied_weights_keys` is empty, so
      `tie_word_embeddings` ties nothing.

    The checkpoint's multi-token-prediction layers (`num_nextn_predict_layers`) are not
    built (`_keys_to_ignore_on_load_unexpected`).

    Engines page the KDA layers' conv window and recurrent state per sequence (vLLM
    `_get_kda_state_shape_for_config` → `MambaStateShapeCalculator.kda_state_shape`,
    vllm/model_executor/models/bailing_moe_v3.py; SGLang `BailingHybridConfig.
    mamba2_cache_params`, python/sglang/srt/configs/bailing_hybrid.py) and the MLA layers'
    latent per token, as `kinds/kda.py` and `kinds/mla.py` size them."""
    layers = c.integer("num_hidden_layers")
    hidden, heads = c.integer("hidden_size"), c.integer("num_attention_heads")
    notes: list[str] = []
    kinds = _layer_kinds(c, layers, notes)
    mla = MLA(kv_lora_rank=c.integer("kv_lora_rank"),
              qk_rope_head_dim=c.integer("qk_rope_head_dim"),
              qk_nope_head_dim=c.integer("qk_nope_head_dim"),
              v_head_dim=c.integer("v_head_dim"), q_lora_rank=c.opt_integer("q_lora_rank"))
    size = c.integer("moe_intermediate_size")
    shared = c.integer("num_shared_experts", minimum=0)
    sparse = _moe_layers(c, layers)
    moe = MoE(experts=c.integer("num_experts"), top_k=c.integer("num_experts_per_token"),
              expert_intermediate_size=size, shared_experts=1 if shared else 0,
              shared_intermediate_size=size * shared, layers=sparse) if sparse else None
    attention = [i for i, kind in enumerate(kinds) if kind == LayerKind.MLA]
    gate = [extra("layers.{i}.self_attn.g_proj.weight", [heads, hidden], linear=True,
                  shard=Shard.COLUMN, layers=attention, component=Component.ATTENTION)]
    bias = c.flag("attention_bias")
    if c.flag("tie_word_embeddings"):
        notes.append("tie_word_embeddings is true, but BailingHybridForCausalLM ties no "
                     "weights (its _tied_weights_keys is empty): the output head is its own")
    stack = Stack(
        layers=layers, hidden_size=hidden, heads=heads, kv_heads=heads,
        head_dim=mla.qk_nope_head_dim + mla.qk_rope_head_dim, v_head_dim=mla.v_head_dim,
        intermediate_size=c.integer("intermediate_size"), vocab_size=c.integer("vocab_size"),
        tied_embeddings=False, qkv_bias=bias, o_bias=bias,
        layer_types=[str(k) for k in kinds], mla=mla,
        linear_attention=_linear_attention(c, heads), moe=moe,
        extra=gate if attention else [])
    mtp = c.integer("num_nextn_predict_layers", minimum=0)
    if mtp:
        notes.append(f"the checkpoint also holds {mtp} multi-token-prediction layer(s) "
                     "transformers does not build (ignored on load): they are neither "
                     "counted nor described")
    return hf_model(c, Family.MOE if moe else Family.DENSE, decoder=stack,
                    max_context=c.integer("model_max_length"), notes=notes)
