"""The Llama architecture in PyTorch, written to match specdec's C++ reference op for op.

RMSNorm w * (x * rsqrt(mean(x^2) + eps)); Hugging Face RoPE (rotate_half, inv_freq = theta^(-2j/hd));
grouped-query attention under an explicit boolean mask; SwiGLU MLP. Linear weights are [out, in]
(y = x W^T), as in the checkpoints. The drafter heads (EAGLE-1, EAGLE-3, P-EAGLE) reuse the same
layer with a wider attention input.
"""
import math
from dataclasses import dataclass, field, asdict

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class LlamaShape:
    vocab_size: int = 259
    hidden_size: int = 256
    intermediate_size: int = 704
    num_hidden_layers: int = 8
    num_attention_heads: int = 8
    num_key_value_heads: int = 2
    rms_norm_eps: float = 1e-5
    rope_theta: float = 10000.0
    max_position_embeddings: int = 2048
    tie_word_embeddings: bool = False

    @property
    def head_dim(self):
        return self.hidden_size // self.num_attention_heads

    def to_dict(self):
        return asdict(self)


class RMSNorm(nn.Module):
    def __init__(self, n, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(n))
        self.eps = eps

    def forward(self, x):
        return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps))


def rope_cos_sin(positions, head_dim, theta):
    """positions: (B, T) int64 -> cos, sin: (B, 1, T, hd)."""
    inv_freq = theta ** (-torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim)
    freqs = positions.to(torch.float64)[..., None] * inv_freq  # (B, T, hd/2)
    emb = torch.cat([freqs, freqs], dim=-1)
    return emb.cos().float()[:, None], emb.sin().float()[:, None]


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat([-x[..., half:], x[..., :half]], dim=-1)


class Attention(nn.Module):
    def __init__(self, s: LlamaShape, in_features=None):
        super().__init__()
        in_features = in_features or s.hidden_size
        hd = s.head_dim
        self.nh, self.nkv, self.hd = s.num_attention_heads, s.num_key_value_heads, hd
        self.theta = s.rope_theta
        self.q_proj = nn.Linear(in_features, self.nh * hd, bias=False)
        self.k_proj = nn.Linear(in_features, self.nkv * hd, bias=False)
        self.v_proj = nn.Linear(in_features, self.nkv * hd, bias=False)
        self.o_proj = nn.Linear(self.nh * hd, s.hidden_size, bias=False)

    def project_kv(self, x, cos, sin):
        """x: (B, T, in) -> k, v: (B, nkv, T, hd), k rotated."""
        B, T, _ = x.shape
        k = self.k_proj(x).view(B, T, self.nkv, self.hd).transpose(1, 2)
        v = self.v_proj(x).view(B, T, self.nkv, self.hd).transpose(1, 2)
        return k * cos + rotate_half(k) * sin, v

    def forward(self, x, cos, sin, mask, past=None):
        """x: (B, T, in); mask: (T, S) or (B, T, S) bool, True = may attend, S = past + T.
        past: optional (k, v) of earlier keys, each (B, nkv, P, hd). Returns (out, (k, v))."""
        B, T, _ = x.shape
        q = self.q_proj(x).view(B, T, self.nh, self.hd).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k, v = self.project_kv(x, cos, sin)
        if past is not None:
            k = torch.cat([past[0], k], dim=2)
            v = torch.cat([past[1], v], dim=2)
        rep = self.nh // self.nkv
        kk = k.repeat_interleave(rep, dim=1)
        vv = v.repeat_interleave(rep, dim=1)
        scores = (q @ kk.transpose(-1, -2)) / math.sqrt(self.hd)
        m = mask if mask.dim() == 3 else mask[None]
        scores = scores.masked_fill(~m[:, None], float("-inf"))
        out = torch.softmax(scores, dim=-1) @ vv  # (B, nh, T, hd)
        return self.o_proj(out.transpose(1, 2).reshape(B, T, self.nh * self.hd)), (k, v)


class MLP(nn.Module):
    def __init__(self, s: LlamaShape):
        super().__init__()
        self.gate_proj = nn.Linear(s.hidden_size, s.intermediate_size, bias=False)
        self.up_proj = nn.Linear(s.hidden_size, s.intermediate_size, bias=False)
        self.down_proj = nn.Linear(s.intermediate_size, s.hidden_size, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class DecoderLayer(nn.Module):
    """A Llama layer. `attn_in` (default: input_layernorm(x)) feeds q/k/v; the residual is x."""

    def __init__(self, s: LlamaShape, attn_in_features=None, input_norm=True):
        super().__init__()
        self.input_layernorm = RMSNorm(s.hidden_size, s.rms_norm_eps) if input_norm else None
        self.self_attn = Attention(s, attn_in_features)
        self.post_attention_layernorm = RMSNorm(s.hidden_size, s.rms_norm_eps)
        self.mlp = MLP(s)

    def forward(self, x, cos, sin, mask, attn_in=None, past=None):
        if attn_in is None:
            attn_in = self.input_layernorm(x) if self.input_layernorm is not None else x
        a, kv = self.self_attn(attn_in, cos, sin, mask, past)
        h = x + a
        return h + self.mlp(self.post_attention_layernorm(h)), kv


def causal_mask(T, device=None):
    return torch.ones(T, T, dtype=torch.bool, device=device).tril()


class LlamaLM(nn.Module):
    def __init__(self, s: LlamaShape):
        super().__init__()
        self.shape = s
        self.embed_tokens = nn.Embedding(s.vocab_size, s.hidden_size)
        self.layers = nn.ModuleList([DecoderLayer(s) for _ in range(s.num_hidden_layers)])
        self.norm = RMSNorm(s.hidden_size, s.rms_norm_eps)
        self.lm_head = None if s.tie_word_embeddings else nn.Linear(s.hidden_size, s.vocab_size, bias=False)
        init_weights(self)

    def output_weight(self):
        return self.embed_tokens.weight if self.lm_head is None else self.lm_head.weight

    def forward(self, tokens, positions=None, mask=None):
        """tokens: (B, T). Returns logits (B, T, V) and hidden states: a list of L + 1 tensors
        (B, T, H), index i < L the state entering layer i, index L the output after the final norm
        (Hugging Face's output_hidden_states)."""
        B, T = tokens.shape
        if positions is None:
            positions = torch.arange(T)[None].expand(B, T)
        if mask is None:
            mask = causal_mask(T)
        cos, sin = rope_cos_sin(positions, self.shape.head_dim, self.shape.rope_theta)
        x = self.embed_tokens(tokens)
        hidden = []
        for layer in self.layers:
            hidden.append(x)
            x, _ = layer(x, cos, sin, mask)
        x = self.norm(x)
        hidden.append(x)
        return x @ self.output_weight().t(), hidden


def init_weights(module, std=0.02):
    for m in module.modules():
        if isinstance(m, (nn.Linear, nn.Embedding)):
            nn.init.normal_(m.weight, mean=0.0, std=std)
            if getattr(m, "bias", None) is not None:
                nn.init.zeros_(m.bias)


def parameter_count(module):
    return sum(p.numel() for p in module.parameters())
