"""Tensor names → component, role and layer, for Hugging Face and llama.cpp names."""

from __future__ import annotations

import pytest

from llm_inventory.checkpoint.classify import classify
from llm_inventory.spec.model import Component, TensorRole

C, R = Component, TensorRole


@pytest.mark.parametrize(
    ("name", "component", "role", "layer"),
    [
        ("model.embed_tokens.weight", C.EMBEDDINGS, R.WEIGHT, None),
        ("lm_head.weight", C.LM_HEAD, R.WEIGHT, None),
        ("model.norm.weight", C.NORMS, R.WEIGHT, None),
        ("model.layers.7.input_layernorm.weight", C.NORMS, R.WEIGHT, 7),
        ("model.layers.7.post_attention_layernorm.weight", C.NORMS, R.WEIGHT, 7),
        ("model.layers.0.self_attn.q_proj.weight", C.ATTENTION, R.WEIGHT, 0),
        ("model.layers.0.self_attn.q_norm.weight", C.ATTENTION, R.WEIGHT, 0),
        ("model.layers.0.self_attn.kv_a_layernorm.weight", C.ATTENTION, R.WEIGHT, 0),
        ("model.layers.3.self_attn.kv_b_proj.weight_scale_inv", C.ATTENTION, R.SCALE, 3),
        ("model.layers.3.mlp.gate.weight", C.ROUTER, R.WEIGHT, 3),
        ("model.layers.3.mlp.gate.e_score_correction_bias", C.ROUTER, R.BUFFER, 3),
        ("model.layers.3.mlp.experts.255.down_proj.weight", C.EXPERTS, R.WEIGHT, 3),
        ("model.layers.3.mlp.shared_experts.up_proj.weight", C.SHARED_EXPERTS, R.WEIGHT, 3),
        ("model.layers.2.mlp.shared_expert_gate.weight", C.SHARED_EXPERTS, R.WEIGHT, 2),
        ("model.layers.1.mlp.gate_proj.weight", C.MLP, R.WEIGHT, 1),
        ("model.layers.1.mlp.router.bias", C.ROUTER, R.WEIGHT, 1),
        ("model.layers.1.mlp.experts.gate_up_proj_blocks", C.EXPERTS, R.WEIGHT, 1),
        ("model.layers.1.mlp.experts.gate_up_proj_scales", C.EXPERTS, R.SCALE, 1),
        ("model.layers.4.self_attn.sinks", C.ATTENTION, R.WEIGHT, 4),
        ("model.layers.5.self_attn.q_proj.qweight", C.ATTENTION, R.WEIGHT, 5),
        ("model.layers.5.self_attn.q_proj.qzeros", C.ATTENTION, R.ZERO_POINT, 5),
        ("model.layers.5.self_attn.q_proj.scales", C.ATTENTION, R.SCALE, 5),
        ("model.layers.5.self_attn.q_proj.g_idx", C.ATTENTION, R.INDEX, 5),
        ("model.layers.6.mixer.in_proj.weight", C.MIXER, R.WEIGHT, 6),
        ("model.layers.61.eh_proj.weight", C.OTHER, R.WEIGHT, 61),
        ("model.layers.61.shared_head.head.weight", C.LM_HEAD, R.WEIGHT, 61),
        ("model.visual.blocks.3.attn.qkv.weight", C.ENCODER, R.WEIGHT, None),
        ("model.visual.merger.mlp.0.weight", C.PROJECTOR, R.WEIGHT, None),
        ("vision_tower.vision_model.encoder.layers.2.mlp.fc1.weight", C.ENCODER, R.WEIGHT,
         None),
        ("multi_modal_projector.linear_1.weight", C.PROJECTOR, R.WEIGHT, None),
        ("model.language_model.layers.9.mlp.down_proj.weight", C.MLP, R.WEIGHT, 9),
        # llama.cpp (GGUF) names
        ("token_embd.weight", C.EMBEDDINGS, R.WEIGHT, None),
        ("output.weight", C.LM_HEAD, R.WEIGHT, None),
        ("output_norm.weight", C.NORMS, R.WEIGHT, None),
        ("rope_freqs.weight", C.OTHER, R.BUFFER, None),
        ("blk.0.attn_norm.weight", C.NORMS, R.WEIGHT, 0),
        ("blk.0.attn_q_norm.weight", C.ATTENTION, R.WEIGHT, 0),
        ("blk.0.attn_qkv.weight", C.ATTENTION, R.WEIGHT, 0),
        ("blk.0.attn_kv_a_mqa.weight", C.ATTENTION, R.WEIGHT, 0),
        ("blk.2.ffn_gate_inp.weight", C.ROUTER, R.WEIGHT, 2),
        ("blk.2.ffn_gate_exps.weight", C.EXPERTS, R.WEIGHT, 2),
        ("blk.2.ffn_up_shexp.weight", C.SHARED_EXPERTS, R.WEIGHT, 2),
        ("blk.2.ffn_gate_inp_shexp.weight", C.SHARED_EXPERTS, R.WEIGHT, 2),
        ("blk.2.exp_probs_b.bias", C.ROUTER, R.BUFFER, 2),
        ("blk.1.ffn_down.weight", C.MLP, R.WEIGHT, 1),
        ("blk.46.nextn.eh_proj.weight", C.OTHER, R.WEIGHT, 46),
    ],
)
def test_classify(name: str, component: Component, role: TensorRole, layer: int | None) -> None:
    assert classify(name) == (component, role, layer)
