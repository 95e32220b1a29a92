"""Qwen2.5-Omni (transformers `models/qwen2_5_omni`, `Qwen2_5OmniForConditionalGeneration`):
a thinker (vision tower, audio tower, Qwen2 language model) that writes text, a talker
(a second Qwen2 decoder over codec tokens) and token2wav (a DiT and a BigVGAN vocoder)
that turn its output into speech.

What is counted: the thinker is the model — the part vLLM serves
(`Qwen2_5OmniThinkerForConditionalGeneration`; its loader skips `talker.` and `token2wav.`)
and whose KV cache a serving plan sizes. The talker and token2wav are counted exactly apart
(`speech_parameters`) and named in the notes: transformers builds all three, and a
checkpoint holds all three.
"""

from __future__ import annotations

from llm_inventory.errors import InputError
from llm_inventory.spec.hf import HFConfig
from llm_inventory.spec.hf.common import extra, linear, norm, sub_config, vlm_model
from llm_inventory.spec.hf.qwen import qwen2
from llm_inventory.spec.hf.qwen_vl import qwen2_5_vl_tower
from llm_inventory.spec.model import Encoder, ModelSpec, Stack


def _audio(a: HFConfig) -> Encoder:
    """The audio tower (`Qwen2_5OmniAudioEncoder`, Whisper's encoder): two Conv1d with
    biases over the mel bins, sinusoidal positions (a buffer), layers of pre-LayerNorm
    attention (k_proj without bias) and a plain MLP with biases, a bos/eos embedding of
    `output_dim`, a final LayerNorm and a projection to `output_dim`."""
    width, mels = a.integer("d_model"), a.integer("num_mel_bins")
    out = a.integer("output_dim")
    stem = [extra("conv1.weight", [width, mels, 3]), extra("conv1.bias", [width]),
            extra("conv2.weight", [width, width, 3]), extra("conv2.bias", [width]),
            extra("audio_bos_eos_token.weight", [2, out])]
    stem += norm("ln_post", width, bias=True)
    stem += linear("proj", out, width)
    heads = a.integer("encoder_attention_heads")
    tower = Stack(layers=a.integer("encoder_layers"), hidden_size=width, heads=heads,
                  head_dim=width // heads, intermediate_size=a.integer("encoder_ffn_dim"),
                  mlp="plain", mlp_bias=True, qkv_bias=True, k_bias=False, o_bias=True,
                  norm="layer", final_norm=False, vocab_size=0, lm_head=False, rope=False,
                  extra=stem)
    return Encoder(kind="audio", stack=tower)


def qwen2_5_omni(c: HFConfig) -> ModelSpec:
    """Qwen2.5-Omni's thinker: the Qwen2.5-VL vision tower (14 px patches, 2 × 2 merge),
    the Whisper-style audio tower (25 tokens per second of audio after its 2× pooling), and
    a Qwen2 decoder with M-RoPE; the talker and token2wav are noted, not counted."""
    _, thinker = sub_config(c, "thinker_config", "qwen2_5_omni_thinker")
    _, v = sub_config(thinker, "vision_config", "qwen2_5_omni_vision_encoder")
    _, a = sub_config(thinker, "audio_config", "qwen2_5_omni_audio_encoder")
    _, text = sub_config(thinker, "text_config", "qwen2_5_omni_text", reads_as="qwen2")
    decoder = qwen2(text).decoder
    assert decoder is not None
    decoder = decoder.model_copy(update={"tied_embeddings": thinker.flag("tie_word_embeddings")})
    notes = []
    if c.flag("enable_audio_output"):
        parts = speech_parameters(c)
        notes.append(f"the thinker is counted (what vLLM serves); speech output adds a talker "
                     f"({parts['talker']:,}) and token2wav ({parts['token2wav']:,})")
    spec = vlm_model(c, decoder, qwen2_5_vl_tower(v, round_sides=True), text, notes)
    return spec.model_copy(update={"extra_encoders": [_audio(a)]})


def speech_parameters(c: HFConfig) -> dict[str, int]:
    """Parameters of the talker and of token2wav, as transformers builds them."""
    _, talker = sub_config(c, "talker_config", "qwen2_5_omni_talker")
    _, t2w = sub_config(c, "token2wav_config", "qwen2_5_omni_token2wav")
    _, dit = sub_config(t2w, "dit_config", "qwen2_5_omni_dit")
    _, vocoder = sub_config(t2w, "bigvgan_config", "qwen2_5_omni_bigvgan")
    return {"talker": _talker(talker), "token2wav": _dit(dit) + _bigvgan(vocoder)}


def _talker(t: HFConfig) -> int:
    """`Qwen2_5OmniTalkerForConditionalGeneration`: thinker_to_talker_proj (embedding_size →
    hidden, with bias), a codec embedding of `embedding_size`, Qwen2 layers (q/k/v biases),
    the final norm, and codec_head (hidden → vocab, no bias)."""
    hidden, emb, vocab = (t.integer("hidden_size"), t.integer("embedding_size"),
                          t.integer("vocab_size"))
    heads, kv = t.integer("num_attention_heads"), t.integer("num_key_value_heads")
    head_dim = t.integer("head_dim", hidden // heads)
    q, k = heads * head_dim, kv * head_dim
    layer = (q * hidden + q) + 2 * (k * hidden + k) + hidden * q \
        + 3 * hidden * t.integer("intermediate_size") + 2 * hidden
    return (emb * hidden + hidden) + vocab * emb + t.integer("num_hidden_layers") * layer \
        + hidden + hidden * vocab


def _conv(out: int, inp: int, kernel: int, bias: bool = True) -> int:
    return out * inp * kernel + (out if bias else 0)


def _dit(d: HFConfig) -> int:
    """`Qwen2_5OmniToken2WavDiTModel`: timestep MLP (256 → h → h), codec embedding
    (num_embeds + 1 rows), the input projection and its ECAPA-TDNN speaker encoder, DiT
    layers (adaptive LayerNorm-zero h → 6h, q/k/v/out, MLP h → h·ff_mult → h, all with
    biases), the final adaptive norm (h → 2h) and the output projection to the mel bins."""
    hidden, mel = d.integer("hidden_size"), d.integer("mel_dim")
    inner = d.integer("head_dim") * d.integer("num_attention_heads")
    wide = int(hidden * d.number("ff_mult"))
    enc_dim = d.integer("enc_dim")
    total = (256 * hidden + hidden) + (hidden * hidden + hidden)
    total += (d.integer("num_embeds") + 1) * d.integer("emb_dim")
    total += (mel + enc_dim + d.integer("enc_emb_dim") + d.integer("emb_dim")) * hidden + hidden
    total += _ecapa(d, mel, enc_dim)
    layer = (hidden * 6 * hidden + 6 * hidden) + 3 * (hidden * inner + inner) \
        + (inner * hidden + hidden) + (hidden * wide + wide) + (wide * hidden + hidden)
    total += d.integer("num_hidden_layers") * layer
    return total + (hidden * 2 * hidden + 2 * hidden) + (hidden * mel + mel)


def _ecapa(d: HFConfig, mel: int, enc_dim: int) -> int:
    """The ECAPA-TDNN speaker encoder: a TDNN, SE-Res2Net blocks (TDNN, Res2Net of
    scale − 1 TDNNs over a 1 / scale slice, TDNN, squeeze-excitation), the multi-layer
    aggregation TDNN, attentive statistics pooling and the final 1 × 1 convolution."""
    channels = d.int_list("enc_channels") or []
    kernels = d.int_list("enc_kernel_sizes") or []
    if len(channels) < 2 or len(kernels) != len(channels):
        raise InputError(f"{d.label}: enc_channels",
                         "needs two or more channels, one kernel size each")
    scale, se = d.integer("enc_res2net_scale"), d.integer("enc_se_channels")
    total = _conv(channels[0], mel, kernels[0])
    for i in range(1, len(channels) - 1):
        inp, out, kernel = channels[i - 1], channels[i], kernels[i]
        total += _conv(out, inp, 1) + (scale - 1) * _conv(out // scale, out // scale, kernel)
        total += _conv(out, out, 1) + _conv(se, out, 1) + _conv(out, se, 1)
    last, attention = channels[-1], d.integer("enc_attention_channels")
    total += _conv(last, last, kernels[-1])
    total += _conv(attention, 3 * last, 1) + _conv(last, attention, 1)
    return total + _conv(enc_dim, 2 * last, 1)


def _bigvgan(b: HFConfig) -> int:
    """`Qwen2_5OmniToken2WavBigVGANModel`: conv_pre, one transposed convolution per upsample
    rate halving the channels, per stage one AMP block per resblock kernel (six convolutions
    and six Snake-beta activations of 2 × channels each), a final Snake-beta and conv_post
    without bias; the anti-aliasing filters are buffers."""
    first, mel = b.integer("upsample_initial_channel"), b.integer("mel_dim")
    rates = b.int_list("upsample_rates") or []
    kernels = b.int_list("upsample_kernel_sizes") or []
    res_kernels = b.int_list("resblock_kernel_sizes") or []
    if not rates or len(kernels) != len(rates) or not res_kernels:
        raise InputError(f"{b.label}: upsample_rates",
                         "needs one kernel size per upsample rate and resblock kernel sizes")
    total = _conv(first, mel, 7)
    for i, kernel in enumerate(kernels):
        inp, out = first // (1 << i), first // (1 << (i + 1))
        total += inp * out * kernel + out
        for res in res_kernels:
            total += 6 * _conv(out, out, res) + 6 * 2 * out
    last = first // (1 << len(rates))
    return total + 2 * last + _conv(1, last, 7, bias=False)

