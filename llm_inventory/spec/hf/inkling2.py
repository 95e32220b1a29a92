"""Thinking Machines' Inkling 2 (transformers 5.25 `models/inkling2`: `Inkling2ForCausalLM`,
`Inkling2ForConditionalGeneration`).

Inkling's layer (`inkling.py`) reworked: attention without rotary whose queries carry a
learned per-head scale before an L2 clip; keys and values each pass a short convolution —
on full layers a dynamic one, static taps `static_weight` plus per-token taps projected
from the layer's input (`weight_proj`, one set per K/V head); a relative position bias
whose `linear` states carry a per-head scale; a per-head attention sink projected from the
hidden state (`sink_proj`); and a sigmoid-gated output (`gate_proj`). Every layer's MLP is a
MoE of softcapped SwiGLU experts without shared experts, routed by a float32 router whose
`e_score_correction_bias` is a buffer. Each attention and MLP input is a learned attention
over the residual blocks (`Inkling2BlockAttentionResidual`: a query of hidden size, three
on full layers' attention input, none on layer 0's), and full layers norm Q, K and V inputs
apart. The four conv windows per layer are Inkling's (`kinds/residual_conv.py`); the head
has `unpadded_vocab_size` rows, the token table `vocab_size`.
"""

from __future__ import annotations

from llm_inventory.errors import InputError
from llm_inventory.spec.hf import HFConfig
from llm_inventory.spec.hf.common import extra, hf_model, linear, norm, sub_config
from llm_inventory.spec.hf.inkling import KINDS, STATE_ASSUMED, per_layer, read_attention
from llm_inventory.spec.model import (
    Component,
    Encoder,
    ExtraTensor,
    Family,
    LayerKind,
    Loop,
    Media,
    ModelSpec,
    MoE,
    Shard,
    Stack,
)


def _attention(where: list[int], heads: int, kv: int, dim: int, extent: int, d_rel: int,
               kernel: int, hidden: int, dynamic: bool) -> list[ExtraTensor]:
    """The tensors of one kind of layer's attention the `full`/`sliding` kinds do not
    build (they build q, k, v and o, and the gate through `attn_output_gate`)."""
    at, attn = "layers.{i}.self_attn", Component.ATTENTION
    tensors = [
        extra(f"{at}.q_proj.norm.scale", [heads, dim], layers=where, component=attn),
        extra(f"{at}.sink_proj.weight", [heads, hidden], linear=True, shard=Shard.COLUMN,
              layers=where, component=attn),
        extra(f"{at}.relative_position_bias.linear.weight", [heads * d_rel, hidden],
              linear=True, shard=Shard.COLUMN, layers=where, component=attn),
        extra(f"{at}.relative_position_bias.norm.scale", [heads, d_rel], layers=where,
              component=attn),
        extra(f"{at}.relative_position_bias.proj", [d_rel, extent], layers=where,
              component=attn)]
    for name in ("k_proj", "v_proj"):
        if dynamic:
            tensors += [
                extra(f"{at}.{name}.sconv.static_weight", [kernel, kv * dim], layers=where,
                      component=Component.MIXER),
                extra(f"{at}.{name}.sconv.weight_proj.weight", [kv * kernel, hidden],
                      linear=True, layers=where, component=Component.MIXER)]
        else:
            tensors.append(extra(f"{at}.{name}.sconv.conv1d.weight", [kv * dim, 1, kernel],
                                 layers=where, component=Component.MIXER))
    return tensors


def _kinds(c: HFConfig, layers: int) -> list[LayerKind]:
    """`layer_types`, else full attention on every sixth layer and sliding elsewhere
    (`Inkling2TextConfig.__post_init__`)."""
    default = [LayerKind.FULL if (i + 1) % 6 == 0 else LayerKind.SLIDING
               for i in range(layers)]
    return per_layer(c, "layer_types", KINDS, layers, default)


def _text(c: HFConfig) -> tuple[Stack, list[str]]:
    a = read_attention(c, _kinds)
    layers, hidden, kernel = a.layers, a.hidden, a.kernel
    full, sliding = a.full, a.sliding
    vocab = c.integer("vocab_size")
    rows = c.integer("unpadded_vocab_size")
    if rows > vocab:
        raise InputError(f"{c.label}: unpadded_vocab_size", f"must be at most vocab_size "
                         f"({vocab}), got {rows}")
    every = list(range(layers))
    conv = Component.MIXER
    extras = [*_attention(full, a.heads, a.kv, a.head_dim, a.extent, a.d_rel, kernel, hidden,
                          True),
              *_attention(sliding, a.swa_heads, a.swa_kv, a.swa_dim, a.window, a.d_rel, kernel,
                          hidden, False)]
    extras += [extra(f"layers.{{i}}.{name}.conv1d.weight", [hidden, 1, kernel], layers=every,
                     component=conv)
               for name in ("post_attention_convolution", "post_mlp_convolution")]
    if full:  # q/k/v input norms in place of one input norm: two more than sliding layers
        extras += [extra(f"layers.{{i}}.{name}.weight", [hidden], layers=full,
                         component=Component.NORMS)
                   for name in ("k_input_layernorm", "v_input_layernorm")]
    full_after_0 = [i for i in full if i]
    sliding_after_0 = [i for i in sliding if i]
    if full_after_0:
        extras.append(extra("layers.{i}.attention_input.query", [3, hidden],
                            layers=full_after_0))
    if sliding_after_0:
        extras.append(extra("layers.{i}.attention_input.query", [hidden],
                            layers=sliding_after_0))
    extras += [extra("layers.{i}.mlp_input.query", [hidden], layers=every),
               extra("final_input.query", [hidden])]
    moe = MoE(experts=c.integer("n_routed_experts"), top_k=c.integer("num_experts_per_tok"),
              expert_intermediate_size=c.integer("moe_intermediate_size"))
    stack = a.stack(conv_weights=False, moe=moe, vocab_size=rows, embedding_rows=vocab,
                    attn_output_gate=True, extra=extras)
    notes = [STATE_ASSUMED]
    if rows < vocab:
        notes.append(f"the head has unpadded_vocab_size ({rows:,}) rows, the token table "
                     f"vocab_size ({vocab:,})")
    return stack, notes


def inkling2_text(c: HFConfig) -> ModelSpec:
    """`Inkling2ForCausalLM`: the text model and its own head."""
    stack, notes = _text(c)
    spec = hf_model(c, Family.MOE, decoder=stack, notes=notes,
                    max_context=c.opt_integer("max_position_embeddings"))
    return spec.model_copy(update={"state_estimated": STATE_ASSUMED})


def _vision(v: HFConfig, text_hidden: int) -> Encoder:
    """`Inkling2VisionModel`: a bias-free linear patch embedding of 3 × `patch_size`²
    values, a learned `posemb_grid_size`² position table (interpolated to the image), a
    class embedding and its position, a pre-LayerNorm, Step-3.7's encoder layers (biased
    q/k/v/out attention with weightless axial rotary, a biased plain MLP of
    `intermediate_size` — int(hidden × `mlp_ratio`) when unset — two LayerNorms and two
    layer scales), then the merger: `spatial_merge_size`² patches concatenated, Linear to
    `projection_hidden_dim`, activation, Linear to the text width (biases per
    `projector_bias`)."""
    hidden, patch = v.integer("hidden_size"), v.integer("patch_size")
    channels, merge = v.integer("num_channels"), v.integer("spatial_merge_size")
    inner = v.opt_integer("intermediate_size")
    if inner is None:
        inner = int(hidden * v.number("mlp_ratio"))
    else:
        v.superseded("mlp_ratio")
    if inner < 1:
        raise InputError(f"{v.label}: mlp_ratio", "must give an MLP at least 1 wide")
    grid = v.integer("posemb_grid_size")
    layers = list(range(v.integer("num_hidden_layers")))
    width, bias = v.integer("projection_hidden_dim"), v.flag("projector_bias")
    v.superseded("text_hidden_size")  # must equal the text width (validate_architecture)
    stem = [extra("embeddings.patch_embedding.weight", [hidden, channels * patch * patch],
                  linear=True),
            extra("embeddings.position_embedding.weight", [grid * grid, hidden]),
            extra("embeddings.class_embedding", [hidden]),
            extra("embeddings.cls_position_embedding", [hidden]),
            *norm("pre_layernorm", hidden, bias=True),
            extra("layers.{i}.lambda_1", [hidden], layers=layers),
            extra("layers.{i}.lambda_2", [hidden], layers=layers)]
    tower = Stack(layers=len(layers), hidden_size=hidden, heads=v.integer("num_attention_heads"),
                  intermediate_size=inner, mlp="plain", mlp_bias=True, qkv_bias=True,
                  o_bias=True, norm="layer", norms_per_layer=2, final_norm=False,
                  vocab_size=0, lm_head=False, rope=False, extra=stem)
    merger = (linear("merger.linear_1", width, merge * merge * hidden, bias=bias,
                     shard=Shard.COLUMN)
              + linear("merger.linear_2", text_hidden, width, bias=bias, shard=Shard.ROW))
    media = Media(patch_size=patch, spatial_merge_size=merge)
    return Encoder(kind="vision", stack=tower, media=media, projector=merger)


_IMAGE_NOTE = ("image tokens are an estimate: merged patches of the image as given, without "
               "the processor's resizing and the class token each image adds")


def inkling2(c: HFConfig) -> ModelSpec:
    """`Inkling2ForConditionalGeneration`: the `inkling2_text` language model with its own
    head and the vision tower of `_vision`, whose text width must be the model's."""
    _, text = sub_config(c, "text_config", "inkling2_text")
    _, v = sub_config(c, "vision_config", "inkling2_vision")
    stack, notes = _text(text)
    return _composite(c, text, v, stack, notes)


def _composite(c: HFConfig, text: HFConfig, v: HFConfig, stack: Stack,
               notes: list[str]) -> ModelSpec:
    hidden = stack.hidden_size or 0
    if v.integer("text_hidden_size") != hidden:
        raise InputError(f"{v.label}: text_hidden_size", f"must equal the text hidden_size "
                         f"({hidden}), got {v.integer('text_hidden_size')}")
    spec = hf_model(c, Family.VLM, decoder=stack, encoder=_vision(v, hidden),
                    max_context=text.opt_integer("max_position_embeddings"),
                    notes=[*notes, _IMAGE_NOTE])
    return spec.model_copy(update={"state_estimated": STATE_ASSUMED})

def _loop(c: HFConfig, stack: Stack) -> tuple[Stack, list[str]]:
    """Inkling 2 Loop's text model (`Inkling2LoopTextModel`): Inkling 2's layers, of which
    `loop_layer_index_start` … `loop_layer_index_end` − 1 run `loop_num_passes` times a
    token. Each looped layer has four message gates (q, k, v, mlp; `down_proj` from
    2 × hidden to `loop_gate_rank`, then `forget_gate_proj` and `message_gate_proj` back to
    hidden) and the model one `message_input` query per looped layer and message
    ((end − start) × 4 × hidden). A checkpoint's `loop_config` (core_start, core_end,
    num_passes, gate_rank) wins over the `loop_*` keys (`Inkling2LoopTextConfig.
    __post_init__`); both ends must be multiples of `n_layers_per_attn_res_block` and the
    start past layer 0 (`validate_architecture`)."""
    given = c.sub("loop_config")
    names = {"core_start": "loop_layer_index_start", "core_end": "loop_layer_index_end",
             "num_passes": "loop_num_passes", "gate_rank": "loop_gate_rank"}
    values = {}
    for key, field in names.items():
        if given.has(key):
            c.superseded(field)
            values[field] = given.integer(key, minimum=1 if key != "core_end" else 0)
        else:
            values[field] = c.integer(field, minimum=1 if field != "loop_layer_index_end" else 0)
    start, end = values["loop_layer_index_start"], values["loop_layer_index_end"]
    passes, rank = values["loop_num_passes"], values["loop_gate_rank"]
    block = c.integer("n_layers_per_attn_res_block")
    for value, key in ((start, "loop_layer_index_start"), (end, "loop_layer_index_end")):
        if value % block:
            raise InputError(f"{c.label}: {key}", f"must be a multiple of "
                             f"n_layers_per_attn_res_block ({block}), got {value}")
    if end <= start:
        raise InputError(f"{c.label}: loop_layer_index_end", f"must be past "
                         f"loop_layer_index_start ({start}), got {end}")
    hidden = stack.hidden_size or 0
    looped = [i for i in range(stack.layers) if start <= i < end]
    gates: list[ExtraTensor] = []
    for gate in ("q", "k", "v", "mlp"):
        at = f"layers.{{i}}.{gate}_message_gate"
        gates += [extra(f"{at}.down_proj.weight", [rank, 2 * hidden], linear=True,
                        layers=looped),
                  extra(f"{at}.forget_gate_proj.weight", [hidden, rank], layers=looped),
                  extra(f"{at}.message_gate_proj.weight", [hidden, rank], layers=looped)]
    if not looped:  # a loop past the last layer builds no gates
        gates = []
    gates.append(extra("message_input.query", [end - start, 4, hidden]))
    loop = Loop(start=start, end=min(end, stack.layers), passes=passes)
    note = (f"layers {start}–{end - 1} run {passes} passes a token, each keeping its own "
            f"cache: their K/V and conv windows are held {passes} times, and their weights "
            f"read and multiplied {passes} times a step (held once)")
    return stack.model_copy(update={"loop": loop, "extra": [*stack.extra, *gates]}), [note]


def inkling2_loop_text(c: HFConfig) -> ModelSpec:
    """`Inkling2LoopForCausalLM`: `_loop` over the `inkling2_text` layers, its own head."""
    stack, notes = _text(c)
    stack, loop = _loop(c, stack)
    spec = hf_model(c, Family.MOE, decoder=stack, notes=[*notes, *loop],
                    max_context=c.opt_integer("max_position_embeddings"))
    return spec.model_copy(update={"state_estimated": STATE_ASSUMED})


def inkling2_loop(c: HFConfig) -> ModelSpec:
    """`Inkling2LoopForConditionalGeneration`: the `inkling2_loop_text` language model and
    Inkling 2's vision tower (its default reaches the loop model's 2,304-wide text)."""
    _, text = sub_config(c, "text_config", "inkling2_loop_text")
    _, v = sub_config(c, "vision_config", "inkling2_vision")
    stack, notes = _text(text)
    stack, loop = _loop(text, stack)
    return _composite(c, text, v, stack, [*notes, *loop])
