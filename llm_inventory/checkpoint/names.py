"""Tensor names → component and role: the one table the checkpoint readers share.

The safetensors and GGUF readers classify every tensor with it (`classify.classify`), and
the GGUF matcher (`gguf_spec`) reads layer norms, experts and the rest through those
components, so a name pattern is defined here once. Each row holds the Hugging Face
(transformers module path) spellings and the GGUF ones (llama.cpp's names, gguf-py
`constants.TENSOR_NAMES`: `blk.N.attn_q`, `ffn_gate_exps`, `token_embd` …).

Rows are tried in order and the first match wins, so a more specific part comes before the
part its names also match (an attention q/k norm before norms; shared experts before the
router; experts before the MLP). Names are matched with their digits masked to 0.
"""

from __future__ import annotations

from llm_inventory.spec.model import Component, TensorRole

# What a tensor is: quantization scales, zero points and GPTQ's g_idx are not parameters;
# buffers a checkpoint stores (DeepSeek's e_score_correction_bias, llama.cpp's rope_freqs)
# are not either. Anything else is a weight.
ROLES: tuple[tuple[TensorRole, str], ...] = (
    (TensorRole.SCALE,
     r"(weight_scale(_inv|_2)?|input_scale|output_scale|(^|[._])[kvq]_scale|global_scale"
     r"|\.scales|_scales|absmax|quant_map|quant_state(\..*)?|\.SCB)$"),
    (TensorRole.ZERO_POINT, r"(qzeros|zero_point|\.zeros)$"),
    (TensorRole.INDEX, r"g_idx$"),
    (TensorRole.BUFFER,
     r"(e_score_correction_bias|inv_freq|rope_freqs\.weight|exp_probs_b\.bias"
     r"|rope_factors_(long|short)\.weight|position_ids|weight_format)$"),
)

COMPONENTS: tuple[tuple[Component, str], ...] = (
    (Component.PROJECTOR,
     r"(multi_modal_projector|mm_projector|(^|\.)visual\.merger|vision_projection|"
     r"(^|\.)connector\.|^mm\.|^resampler\.|audio_projector)"),
    (Component.ENCODER,
     r"(vision_tower|vision_model|(^|\.)visual\.|vision_encoder|audio_tower|audio_encoder|"
     r"image_encoder|^v\.|^a\.|(^|\.)encoder\.layers\.)"),
    # Norms inside attention (q/k norms, MLA's latent norms) belong to it.
    (Component.ATTENTION,
     r"((^|\.)(self_attn|attention|attn|cross_attn|encoder_attn)\.[^.]*norm"
     r"|attn_(q|k|q_a|kv_a)_norm)"),
    (Component.NORMS, r"(norm|(^|\.)ln_?(\d+|f)?\.|layernorm)"),
    (Component.SHARED_EXPERTS, r"(shared_expert|shexp)"),
    (Component.ROUTER,
     r"(\.gate\.(weight|bias|e_score_correction_bias)$|(^|\.)router\.|ffn_gate_inp\.|exp_probs_b)"),
    (Component.EXPERTS, r"(\.experts\.|_exps\.|_chexps\.)"),
    (Component.EMBEDDINGS,
     r"(embed_tokens|(^|\.)wte\.|word_embeddings|tok_embeddings|token_embd\.|embed_positions"
     r"|(^|\.)wpe\.|position_embd|position_embeddings|token_type)"),
    (Component.LM_HEAD, r"((^|\.)lm_head\.|^output\.weight$|embed_out\.|shared_head\.head)"),
    (Component.ATTENTION,
     r"(self_attn|attention|(^|\.)attn|\.(q|k|v|o)_proj\.|query_key_value|c_attn|sinks"
     r"|attn_)"),
    # LFM2's short convolutions: `layers.N.conv.{in_proj,conv,out_proj}`.
    (Component.MIXER, r"(mixer|mamba|ssm_|\.ssm\.|time_mix|channel_mix|shortconv|linear_attn"
                      r"|\.conv\.(in_proj|conv|out_proj)\.)"),
    (Component.MLP,
     r"(mlp|feed_forward|ffn|(^|\.)fc\d\.|c_fc|intermediate\.dense|(^|\.)output\.dense)"),
)

# The decoder layer a tensor belongs to: `model.layers.N.`, `h.N.`, GGUF's `blk.N.` …
LAYER = r"(?:^|\.)(?:layers|h|blk|blocks|block)\.(\d+)\."
