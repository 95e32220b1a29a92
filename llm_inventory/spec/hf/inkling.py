"""Thinking Machines' Inkling (transformers 5.25 `models/inkling`: `InklingForCausalLM`,
`InklingForConditionalGeneration`).

A text layer is attention without rotary — queries, keys and values per head, per-head q/k
RMSNorms, and a relative position bias: `r_proj` (hidden → heads × `d_rel`) mixes a learned
bank `rel_logits_proj.proj` of `d_rel` × extent bias profiles, the extent being the window
on sliding layers and `rel_extent` on full ones. Sliding layers (`hybrid_sliding`) have
heads of their own (`swa_*`). Four short convolutions ride beside it (`kinds/
residual_conv.py`). The MLP is a dense SwiGLU with a learned scalar `global_scale`, or a MoE
whose router scores the routed and the shared experts together (its weight has experts +
shared rows, plus a float32 `global_scale`; `e_score_correction_bias` is a buffer) and whose
shared experts are stacked tensors. Token embeddings are normalised (`InklingNormedEmbedding`)
and the head is never tied.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from llm_inventory.errors import InputError
from llm_inventory.spec.hf import HFConfig
from llm_inventory.spec.hf.common import extra, hf_model, norm, sub_config
from llm_inventory.spec.model import (
    Component,
    Encoder,
    Family,
    LayerKind,
    LayerOverride,
    Media,
    ModelSpec,
    MoE,
    ResidualConv,
    Shard,
    Stack,
)

KINDS = {"hybrid": LayerKind.FULL, "hybrid_sliding": LayerKind.SLIDING}

STATE_ASSUMED = ("no mainline serving engine has an Inkling model file: the cache is "
                 "transformers' (K/V per token, sliding layers capped at the window, four "
                 "float32 conv windows per layer), its conv windows at kernel − 1 positions "
                 "and its split under tensor parallelism assumed, not read")
_MTP = ("{n} multi-token-prediction layer{s} named by the config {are} not built by "
        "transformers (InklingPreTrainedModel drops model.mtp.* on load) and not counted")


def per_layer(c: HFConfig, key: str, allowed: dict[str, Any], layers: int,
              fallback: list[Any]) -> list[Any]:
    """One entry of `allowed` per layer, as `key` names them; `fallback` when absent."""
    names = c.str_list(key)
    if names is None:
        return fallback
    if len(names) != layers or set(names) - set(allowed):
        raise InputError(f"{c.label}: {key}", f"needs one of {', '.join(sorted(allowed))} "
                         f"for each of the {layers} layers")
    return [allowed[name] for name in names]


@dataclass(frozen=True)
class Attention:
    """The attention shapes both Inkling generations read: full layers' heads, the sliding
    layers' own (`swa_*`), the relative bias's `d_rel` and extent, the conv kernel, and
    which layers slide."""

    layers: int
    hidden: int
    heads: int
    kv: int
    head_dim: int
    swa_heads: int
    swa_kv: int
    swa_dim: int
    window: int
    d_rel: int
    extent: int
    kernel: int
    kinds: list[LayerKind]

    @property
    def full(self) -> list[int]:
        return [i for i, kind in enumerate(self.kinds) if kind == LayerKind.FULL]

    @property
    def sliding(self) -> list[int]:
        return [i for i, kind in enumerate(self.kinds) if kind == LayerKind.SLIDING]

    def stack(self, *, conv_weights: bool, **fields: Any) -> Stack:
        """The stack with what both generations share (untied head, normed embedding, no
        rotary, the sliding layers' heads, the four convolutions beside attention) and
        `fields`."""
        sliding = bool(self.sliding)
        return Stack(
            layers=self.layers, hidden_size=self.hidden, heads=self.heads, kv_heads=self.kv,
            head_dim=self.head_dim, tied_embeddings=False, embedding_norm=True, rope=False,
            layer_types=self.kinds, sliding_window=self.window if sliding else None,
            overrides=[LayerOverride(kinds=[LayerKind.SLIDING], heads=self.swa_heads,
                                     kv_heads=self.swa_kv, head_dim=self.swa_dim)]
            if sliding else [],
            residual_conv=ResidualConv(kernel=self.kernel, weights=conv_weights),
            parallel_mixers=[LayerKind.RESIDUAL_CONV], **fields)


def read_attention(c: HFConfig, kinds: Callable[[HFConfig, int], list[LayerKind]]
                   ) -> Attention:
    """The shared shapes of `c`, each K/V head count dividing its query heads; `kinds`
    gives each layer's kind from the config and the layer count."""
    layers = c.integer("num_hidden_layers")
    shapes = Attention(
        layers=layers, hidden=c.integer("hidden_size"),
        heads=c.integer("num_attention_heads"), kv=c.integer("num_key_value_heads"),
        head_dim=c.integer("head_dim"), swa_heads=c.integer("swa_num_attention_heads"),
        swa_kv=c.integer("swa_num_key_value_heads"), swa_dim=c.integer("swa_head_dim"),
        window=c.integer("sliding_window_size"), d_rel=c.integer("d_rel"),
        extent=c.integer("rel_extent"), kernel=c.integer("conv_kernel_size"),
        kinds=kinds(c, layers))
    for q, k, key in ((shapes.heads, shapes.kv, "num_key_value_heads"),
                      (shapes.swa_heads, shapes.swa_kv, "swa_num_key_value_heads")):
        if q % k:
            raise InputError(f"{c.label}: {key}", f"must divide the {q} attention heads, "
                             f"got {k}")
    return shapes


def _layer_kinds(c: HFConfig, layers: int) -> list[LayerKind]:
    """`layer_types`, else sliding on `local_layer_ids` (or on every layer whose index + 1
    is not a multiple of 6) and full elsewhere (`InklingTextConfig.__post_init__`)."""
    local = c.int_list("local_layer_ids")
    if local is None:
        sliding = {i for i in range(layers) if (i + 1) % 6}
    elif any(i < 0 for i in local):
        raise InputError(f"{c.label}: local_layer_ids", "needs layer indices (0 or more)")
    else:
        sliding = set(local)
    default = [LayerKind.SLIDING if i in sliding else LayerKind.FULL for i in range(layers)]
    if c.has("layer_types"):
        c.superseded("local_layer_ids")
    return per_layer(c, "layer_types", KINDS, layers, default)


def _sparse_layers(c: HFConfig, layers: int) -> list[int]:
    """`mlp_layer_types`, else dense below the checkpoints' `dense_mlp_idx` (0 by default)
    and sparse from there on."""
    dense = c.integer("dense_mlp_idx", 0, minimum=0)
    default = [i >= dense for i in range(layers)]
    if c.has("mlp_layer_types"):
        c.superseded("dense_mlp_idx")
    sparse = per_layer(c, "mlp_layer_types", {"dense": False, "sparse": True}, layers,
                        default)
    return [i for i, moe in enumerate(sparse) if moe]


def _widths(c: HFConfig) -> tuple[int, int]:
    """(the dense MLP's width, the experts' width). A checkpoint's `dense_intermediate_size`
    is the dense width, and its `intermediate_size` then the experts' (`InklingTextConfig.
    __post_init__`, which moves them before `moe_intermediate_size` is read)."""
    if c.has("dense_intermediate_size"):
        c.superseded("moe_intermediate_size")
        return c.integer("dense_intermediate_size"), c.integer("intermediate_size")
    return c.integer("intermediate_size"), c.integer("moe_intermediate_size")


def _stack(c: HFConfig) -> tuple[Stack, list[str]]:
    a = read_attention(c, _layer_kinds)
    layers, hidden = a.layers, a.hidden
    sparse = _sparse_layers(c, layers)
    dense_width, expert_width = _widths(c)
    shared = c.integer("n_shared_experts", minimum=0)
    moe = MoE(experts=c.integer("n_routed_experts"), top_k=c.integer("num_experts_per_tok"),
              expert_intermediate_size=expert_width, shared_experts=shared,
              shared_intermediate_size=expert_width if shared else 0,
              layers=sparse) if sparse else None
    dense = [i for i in range(layers) if i not in sparse]
    if not dense:
        c.superseded("intermediate_size", "dense_intermediate_size")
    attn = Component.ATTENTION
    extras = []
    for where, q, rows in ((a.full, a.heads, a.extent), (a.sliding, a.swa_heads, a.window)):
        if where:
            extras += [extra("layers.{i}.self_attn.r_proj.weight", [q * a.d_rel, hidden],
                             linear=True, shard=Shard.COLUMN, layers=where, component=attn),
                       extra("layers.{i}.self_attn.rel_logits_proj.proj", [a.d_rel, rows],
                             layers=where, component=attn)]
    if dense:
        extras.append(extra("layers.{i}.mlp.global_scale", [1], layers=dense,
                            component=Component.MLP))
    if sparse and shared:
        extras.append(extra("layers.{i}.mlp.gate.shared_rows", [shared, hidden],
                            layers=sparse, component=Component.ROUTER))
    if sparse:
        extras.append(extra("layers.{i}.mlp.gate.global_scale", [1], layers=sparse,
                            component=Component.ROUTER))
    stack = a.stack(conv_weights=True, intermediate_size=dense_width if dense else None,
                    moe=moe, qk_norm="head", vocab_size=c.integer("vocab_size"), extra=extras)
    notes = [STATE_ASSUMED]
    unpadded = c.opt_integer("unpadded_vocab_size")
    if unpadded is not None and unpadded < stack.vocab_size:
        notes.append(f"the head keeps all {stack.vocab_size:,} rows; logits past "
                     f"unpadded_vocab_size ({unpadded:,}) are dropped, not the weights")
    return stack, notes


def _mtp_note(layers: int | None) -> list[str]:
    if not layers:
        return []
    one = layers == 1
    return [_MTP.format(n=layers, s="" if one else "s", are="is" if one else "are")]


def inkling_text(c: HFConfig) -> ModelSpec:
    """`InklingForCausalLM`: the text model and its own (untied) head."""
    stack, notes = _stack(c)
    c.superseded("mtp_local_layer_ids", "chain_hidden_post_norm", "mtp_hidden_states_first")
    notes += _mtp_note(c.opt_integer("num_mtp_layers"))
    family = Family.MOE if stack.moe else Family.DENSE
    spec = hf_model(c, family, decoder=stack, notes=notes,
                    max_context=c.opt_integer("max_position_embeddings"))
    return spec.model_copy(update={"state_estimated": STATE_ASSUMED})


def _prime_factors(number: int) -> list[int]:
    factors: list[int] = []
    while number % 2 == 0:
        factors.append(2)
        number //= 2
    p = 3
    while p * p <= number:
        while number % p == 0:
            factors.append(p)
            number //= p
        p += 2
    return factors + ([number] if number > 1 else [])


def _cumulative(factors: list[int]) -> list[int]:
    out, product = [], 1
    for f in factors:
        product *= f
        out.append(product)
    return out


def _ordered_assignment(cost: list[list[float]]) -> list[int]:
    """The columns, one per row and each at most once, of least total cost, for rows and
    columns both sorted ascending under |row − column| (such costs have an optimal
    assignment that keeps the order, found here by dynamic programming; transformers asks
    scipy's linear_sum_assignment, whose optimum has the same cost)."""
    rows, cols = len(cost), len(cost[0])
    inf = math.inf
    best = [[inf] * (cols + 1) for _ in range(rows + 1)]
    best[0] = [0.0] * (cols + 1)
    for i in range(1, rows + 1):
        for j in range(i, cols + 1):
            best[i][j] = min(best[i][j - 1], best[i - 1][j - 1] + cost[i - 1][j - 1])
    picks, j = [], cols
    for i in range(rows, 0, -1):
        while best[i][j] == best[i][j - 1] and j > i:
            j -= 1
        picks.append(j - 1)
        j -= 1
    return picks[::-1]


def vision_scales(patch: int, temporal: int, layers: int, channels: int
                  ) -> list[tuple[int, int, int, int]]:
    """(t, h, w, channels) before and after each of the `layers` encoder layers
    (`plan_out_scales`, models/inkling/modeling_inkling.py): the scales grow the patch's
    side by its prime factors, largest first (channels rounded up to multiples of 64),
    then its frames (channels: the whole patch × frames × 64, as transformers computes
    them); each layer boundary takes the scale nearest its share of the patch's log size,
    the first and last fixed."""
    h = _cumulative(_prime_factors(patch)[::-1])
    t = _cumulative(_prime_factors(temporal)[::-1])
    side = h[-1] if h else 1
    scales = [(1, 1, 1, channels)]
    scales += [(1, x, x, -(-x * x * channels // 64) * 64) for x in h]
    scales += [(x, side, side, side * side * channels * x * 64) for x in t]
    total = math.log(patch * patch * temporal * channels)
    ideal = [total * i / layers for i in range(layers + 1)]
    sizes = [math.log(a * b * d) for a, b, d, _ in scales]
    cost = [[abs(x - y) for y in sizes] for x in ideal]
    if layers >= len(scales):
        picks = [row.index(min(row)) for row in cost]
    else:
        picks = _ordered_assignment(cost)
    picks[0], picks[-1] = 0, len(scales) - 1
    return [scales[i] for i in picks]


def _vision(v: HFConfig, text_hidden: int) -> Encoder:
    """`InklingVisionModel`: no attention — a stack of bias-free projections, each folding
    the patch's time and space into channels as `vision_scales` plans (the last reaching
    the text width), an RMSNorm and GELU after all but the last, and a final RMSNorm. One
    token per patch of `patch_size`² pixels × `temporal_patch_size` frames."""
    # transformers indexes the patch side's factors: a 1-pixel patch has none to index
    patch, temporal = v.integer("patch_size", minimum=2), v.integer("temporal_patch_size")
    layers, channels = v.integer("num_hidden_layers"), v.integer("num_channels")
    if patch * patch * temporal * channels > 2**40:
        raise InputError(f"{v.label}: patch_size", "patch_size² × temporal_patch_size × "
                         "num_channels must stay within 2^40 values")
    v.superseded("text_hidden_size")  # set to the text model's width by InklingConfig
    scales = vision_scales(patch, temporal, layers, channels)
    tensors = []
    for i, (start, end) in enumerate(zip(scales, scales[1:], strict=False)):
        fold = (end[0] // start[0]) * (end[1] // start[1]) * (end[2] // start[2])
        last = i == layers - 1
        out = text_hidden if last else end[3]
        tensors.append(extra(f"encoder_layers.{i}.projection.weight", [out, start[3] * fold],
                             linear=True))
        if not last:
            tensors += norm(f"encoder_layers.{i}.layer_norm", out, bias=False)
    tower = Stack(layers=1, hidden_size=text_hidden, heads=1,
                  layer_types=[LayerKind.MLP_ONLY], mlp="none", norms_per_layer=0,
                  vocab_size=0, lm_head=False, rope=False, extra=tensors)
    return Encoder(kind="vision", stack=tower,
                   media=Media(patch_size=patch, temporal_patch_size=temporal))


def _audio(a: HFConfig, text_hidden: int) -> Encoder:
    """`InklingAudioModel`: one table of `n_mel_bins` × `mel_vocab_size` codebook rows of
    the text width (each frame's bins are looked up and summed) and an RMSNorm."""
    rows = a.integer("n_mel_bins") * a.integer("mel_vocab_size")
    a.superseded("text_hidden_size")  # set to the text model's width by InklingConfig
    table = extra("embed_audio_tokens.embed_audio_tokens.weight", [rows, text_hidden])
    tower = Stack(layers=1, hidden_size=text_hidden, heads=1,
                  layer_types=[LayerKind.MLP_ONLY], mlp="none", norms_per_layer=0,
                  vocab_size=0, lm_head=False, rope=False, extra=[table])
    return Encoder(kind="audio", stack=tower)


_IMAGE_NOTE = ("image tokens are an estimate: one per patch, without the processor's "
               "rescaling and its extra column per patch row")


def inkling_mm_model(c: HFConfig) -> ModelSpec:
    """`InklingForConditionalGeneration`: the `inkling_text` language model with its own
    head, the vision encoder and the audio codebook, whose outputs (the text width, no
    projector) replace the image and audio placeholders. The checkpoints' top-level
    `mtp_config` fills the text config's MTP keys where it has none."""
    _, text = sub_config(c, "text_config", "inkling_text")
    _, v = sub_config(c, "vision_config", "inkling_vision")
    _, a = sub_config(c, "audio_config", "inkling_audio")
    mtp = c.sub("mtp_config")
    layers = text.opt_integer("num_mtp_layers") or mtp.opt_integer("num_nextn_predict_layers")
    mtp.superseded("chain_hidden_post_norm", "local_layer_ids")
    text.superseded("mtp_local_layer_ids", "chain_hidden_post_norm", "mtp_hidden_states_first")
    stack, notes = _stack(text)
    hidden = stack.hidden_size or 0
    spec = hf_model(c, Family.VLM, decoder=stack, encoder=_vision(v, hidden),
                    max_context=text.opt_integer("max_position_embeddings"),
                    notes=[*notes, _IMAGE_NOTE, *_mtp_note(layers)])
    return spec.model_copy(update={"extra_encoders": [_audio(a, hidden)],
                                   "state_estimated": STATE_ASSUMED})
