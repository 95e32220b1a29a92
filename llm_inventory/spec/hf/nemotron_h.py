"""Nemotron-H and Nemotron 3 (transformers `models/nemotron_h`): one block per layer — a
Mamba-2 mixer (`M`), attention (`*`), a plain MLP (`-`) or a MoE (`E`) — after one norm."""

from __future__ import annotations

from llm_inventory.errors import InputError
from llm_inventory.spec.hf import HFConfig
from llm_inventory.spec.hf.common import decoder_model, extra
from llm_inventory.spec.hf.qwen_next import state_dtype
from llm_inventory.spec.model import (
    MTP,
    SSM,
    LayerKind,
    LayerOverride,
    ModelSpec,
    MoE,
    Stack,
)

_PATTERN = {"M": "linear_attention", "E": "moe", "*": "full_attention", "-": "mlp"}
# transformers' names, with the legacy ones `remap_legacy_layer_types` accepts.
_BLOCKS = {"linear_attention": LayerKind.MAMBA, "mamba": LayerKind.MAMBA,
           "full_attention": LayerKind.FULL, "attention": LayerKind.FULL,
           "moe": "mlp_only", "mlp": "mlp_only"}


def _blocks(c: HFConfig, key: str, pattern_key: str) -> list[str]:
    """A block list: the file's list, else its pattern string (`hybrid_override_pattern`),
    else the class default (`NemotronHConfig.__post_init__`); legacy names remapped."""
    listed = c.str_list(key)
    if listed is None and c.has(pattern_key):
        pattern = c.raw(pattern_key)
        if not isinstance(pattern, str) or set(pattern) - set(_PATTERN):
            raise InputError(f"{c.label}: {pattern_key}", "must be a string of M, E, * and "
                             f"-, got {pattern!r}")
        listed = [_PATTERN[char] for char in pattern]
    if listed is None:
        default = c.raw(key)
        listed = [str(b) for b in default] if isinstance(default, list) else []
    unknown = sorted(set(listed) - set(_BLOCKS))
    if unknown or not listed:
        raise InputError(f"{c.label}: {key}", f"unknown block type {unknown[0]!r}; known: "
                         + ", ".join(_PATTERN.values()) if unknown else "must not be empty")
    return [{"mamba": "linear_attention", "attention": "full_attention"}.get(b, b)
            for b in listed]


def _mtp(c: HFConfig, hidden: int) -> tuple[MTP | None, list[str]]:
    """Nemotron-3-Super's MTP block (vLLM `NemotronHMultiTokenPredictor`,
    vllm/model_executor/models/nemotron_h_mtp.py): one step of an attention block (with the
    enorm / hnorm / eh_proj fusion of [embedding; hidden]) then a MoE block (with its own
    norm and a final_layernorm), sharing the decoder's embeddings and head."""
    steps = c.integer("num_nextn_predict_layers", minimum=0)
    if not steps:
        return None, []
    blocks = _blocks(c, "mtp_layers_block_type", "mtp_hybrid_override_pattern")
    if blocks != ["full_attention", "moe"]:
        return None, [f"multi-token prediction: the MTP pattern {blocks} is not modelled; its "
                      "layers are not counted"]
    mtp = MTP(layers=steps, kind=LayerKind.FULL, moe=True, extra=[
        extra("enorm.weight", [hidden]),
        extra("hnorm.weight", [hidden]),
        extra("eh_proj.weight", [hidden, 2 * hidden], linear=True),
        extra("moe_norm.weight", [hidden]),
        extra("final_layernorm.weight", [hidden]),
    ])
    return mtp, []


def nemotron_h(c: HFConfig) -> ModelSpec:
    """Nemotron-H / Nemotron 3: layers from `layers_block_type` or `hybrid_override_pattern`
    (their count is the pattern's, `NemotronHConfig.num_hidden_layers`). Mamba-2 mixers of
    mamba_num_heads × mamba_head_dim with grouped B/C and a gated norm (`NemotronHMamba2Mixer`),
    attention without biases or rotary positions (`NemotronHAttention`), relu² MLPs without
    a gate, and MoE blocks of ungated experts — in a latent width when moe_latent_size is
    set — with one ungated shared expert (`NemotronHMoE`)."""
    blocks = _blocks(c, "layers_block_type", "hybrid_override_pattern")
    hidden = c.integer("hidden_size")
    heads = c.integer("mamba_num_heads")
    moe_layers = [i for i, b in enumerate(blocks) if b == "moe"]
    moe = None
    if moe_layers:
        # vLLM `NemotronHMoE`: n_shared_experts of the shared width, merged into one MLP;
        # none at 0 (transformers builds one whatever the key says; 1 in every release)
        shared = c.integer("n_shared_experts", 1, minimum=0)
        moe = MoE(
            experts=c.integer("n_routed_experts"), top_k=c.integer("num_experts_per_tok"),
            expert_intermediate_size=c.integer("moe_intermediate_size"), gated=False,
            shared_experts=shared,
            shared_intermediate_size=c.integer("moe_shared_expert_intermediate_size")
            if shared else 0,
            latent_size=c.opt_integer("moe_latent_size"), layers=moe_layers,
        )
    dtype = c.dtype
    mtp, notes = _mtp(c, hidden)
    declared = c.opt_integer("num_hidden_layers")
    if declared is not None and declared != len(blocks):
        notes.append(f"num_hidden_layers says {declared}; the layer pattern has {len(blocks)}, "
                     "which NemotronHConfig and vLLM build")
    stack = Stack(
        layers=len(blocks), hidden_size=hidden, heads=c.integer("num_attention_heads"),
        kv_heads=c.integer("num_key_value_heads"), head_dim=c.integer("head_dim"),
        intermediate_size=c.integer("intermediate_size"), mlp="plain",
        mlp_bias=c.flag("mlp_bias"), norms_per_layer=1, vocab_size=c.integer("vocab_size"),
        tied_embeddings=c.flag("tie_word_embeddings"), rope=False,
        layer_types=[_BLOCKS[b] for b in blocks],
        overrides=[LayerOverride(kinds=[LayerKind.MAMBA, LayerKind.FULL], mlp="none")],
        ssm=SSM(
            version=2, d_state=c.integer("ssm_state_size"), d_conv=c.integer("conv_kernel"),
            d_inner=heads * c.integer("mamba_head_dim"), n_groups=c.integer("n_groups"),
            heads=heads, head_dim=c.integer("mamba_head_dim"),
            conv_bias=c.flag("use_conv_bias"), proj_bias=c.flag("use_bias"),
            # vLLM `NemotronHForCausalLMConfig`: the config's mamba_ssm_cache_dtype, else
            # float32 (the class default too); the conv window in the model dtype.
            state_dtype=state_dtype(c, "mamba_ssm_cache_dtype"), conv_dtype=dtype,
        ),
        moe=moe, mtp=mtp,
    )
    return decoder_model(c, stack, notes=notes)
