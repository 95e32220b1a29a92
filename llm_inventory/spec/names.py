"""The names a model description uses that the engine's rules are keyed by: layer kinds,
parameter components, tensor-parallel shards. Plain enums, no pydantic, so that the layer
kinds can load without the model description (`inventory kv`'s fast path)."""

from __future__ import annotations

from enum import StrEnum


class LayerKind(StrEnum):
    """The built-in decoder-layer kinds (what a layer's mixer is, and so what state it keeps),
    in the order tables list them: each is the module of that name under `engine/kinds/`,
    which holds all its rules. `layer_types` holds names; `kinds.register` adds others."""

    FULL = "full"  # full causal attention: KV for every token
    SLIDING = "sliding"  # sliding-window attention: KV for the last `sliding_window` tokens
    CHUNKED = "chunked"  # chunked local attention: KV within the current `chunk_size` chunk
    MLA = "mla"  # multi-head latent attention: one compressed latent per token
    INDEXED_MLA = "indexed_mla"  # MLA with a sparse-attention indexer key (DeepSeek-V3.2)
    PACKED_MLA = "packed_mla"  # an indexed MLA record packed as vLLM's fp8_ds_mla keeps it
    SCALED_DSA = "scaled_dsa"  # indexed MLA with softmax scaling and NoPE layers (Mistral Large 4)
    POOLED_DSA = "pooled_dsa"  # indexed MLA whose indexer scores pools of tokens (GLM-5.3)
    INDEXED_GQA = "indexed_gqa"  # GQA with a lightning indexer key (MiniMax-M3)
    SWA_KV = "swa_kv"  # sliding window over one shared K = V latent (DeepSeek-V4)
    CSA = "csa"  # compressed sparse attention entries (DeepSeek-V4)
    HCA = "hca"  # heavily compressed attention entries (DeepSeek-V4)
    CSA2 = "csa2"  # a window over one K = V latent reading a shared compressed KV (V4.1)
    CSA2_SOURCE = "csa2_source"  # the V4.1 layer that compresses and keeps its group's KV
    CROSS = "cross"  # cross-attention to encoder output (no self-attention KV)
    SHARED = "shared"  # attention that reads another layer's KV: stores nothing
    CLA = "cla"  # cross-layer attention: reuses an earlier layer's KV
    MAMBA = "mamba"  # recurrent / state-space mixer: fixed state per sequence
    GDN = "gdn"  # Gated DeltaNet linear attention: conv window + recurrent state per sequence
    KDA = "kda"  # Kimi Delta Attention: GDN with a per-channel decay
    LIGHTNING = "lightning"  # lightning (linear) attention: recurrent state per sequence
    SHORT_CONV = "short_conv"  # a gated short convolution: a conv window per sequence
    # four short convs on K, V and both residual branches beside attention (Inkling)
    RESIDUAL_CONV = "residual_conv"
    MLP_ONLY = "mlp_only"  # no mixer: the layer keeps nothing


class Component(StrEnum):
    """Where a parameter belongs in the per-component breakdown."""

    EMBEDDINGS = "embeddings"
    ATTENTION = "attention"
    MLP = "mlp"
    EXPERTS = "experts"
    SHARED_EXPERTS = "shared_experts"
    ROUTER = "router"
    MIXER = "mixer"  # recurrent / state-space mixers
    NORMS = "norms"
    LM_HEAD = "lm_head"
    ENCODER = "encoder"
    PROJECTOR = "projector"
    DENOISER = "denoiser"
    TEXT_ENCODER = "text_encoder"
    VAE = "vae"
    MTP = "mtp"  # multi-token-prediction layers (counted apart: see MTP)
    OTHER = "other"


class Shard(StrEnum):
    """How tensor parallelism divides a tensor."""

    COLUMN = "column"  # output features split across ranks
    ROW = "row"  # input features split across ranks
    VOCAB = "vocab"  # vocabulary rows split (embedding, lm_head)
    KV = "kv"  # K/V projection: split by KV head, replicated past the head count
    REPLICATED = "replicated"  # every rank holds all of it
