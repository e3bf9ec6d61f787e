"""The reference's counter-based randomness (reference/sampling/counter_rng.hpp), bit for bit.

Philox4x32-10 (Salmon et al., SC'11, as Random123 defines it), keyed and counted as specdec does:

    key     = (uint32(seed), uint32(seed >> 32))
    counter = (sequence, position, purpose, index)
    w       = philox4x32_10(counter, key)
    b       = (w0 << 21) | (w1 >> 11)            53 random bits
    uniform = b * 2^-53                          in [0, 1)

so a uniform is a pure function of (seed, sequence, absolute position, purpose, index): the same
numbers whichever engine draws them and in whatever order.
"""
import math

import numpy as np

M0, M1 = 0xD2511F53, 0xCD9E8D57
W0, W1 = 0x9E3779B9, 0xBB67AE85
MASK32 = 0xFFFFFFFF

# RandomPurpose values (the third counter word).
SAMPLE, ACCEPT, RESIDUAL, GUMBEL, TREE, DRAFT = 1, 2, 3, 4, 5, 6


def philox4x32_10(counter, key):
    c0, c1, c2, c3 = (int(x) & MASK32 for x in counter)
    k0, k1 = (int(x) & MASK32 for x in key)
    for r in range(10):
        if r > 0:
            k0 = (k0 + W0) & MASK32
            k1 = (k1 + W1) & MASK32
        p0 = M0 * c0
        p1 = M1 * c2
        c0, c1, c2, c3 = ((p1 >> 32) ^ c1 ^ k0) & MASK32, p1 & MASK32, ((p0 >> 32) ^ c3 ^ k1) & MASK32, p0 & MASK32
    return c0, c1, c2, c3


def key_of(seed):
    seed = int(seed) & 0xFFFFFFFFFFFFFFFF
    return seed & MASK32, seed >> 32


def counter_of(sequence, position, purpose, index=0):
    return (int(sequence) & MASK32, int(position) & MASK32, int(purpose) & MASK32, int(index) & MASK32)


def bits53(seed, sequence, position, purpose, index=0):
    w = philox4x32_10(counter_of(sequence, position, purpose, index), key_of(seed))
    return (w[0] << 21) | (w[1] >> 11)


def uniform(seed, sequence, position, purpose, index=0):
    """In [0, 1 - 2^-53], exact in double."""
    return float(bits53(seed, sequence, position, purpose, index)) * 2.0 ** -53


def uniform_open(seed, sequence, position, purpose, index=0):
    """In [2^-53, 1 - 2^-53]: never 0 or 1."""
    return float(bits53(seed, sequence, position, purpose, index) | 1) * 2.0 ** -53


def gumbel(seed, sequence, position, token):
    return -math.log(-math.log(uniform_open(seed, sequence, position, GUMBEL, token)))


class Draws:
    """The uniforms one step drew, with their counters, in draw order (what a trace records)."""

    def __init__(self, seed, sequence=0):
        self.seed, self.sequence = seed, sequence
        self.values, self.counters = [], []

    def draw(self, position, purpose, index=0):
        u = uniform(self.seed, self.sequence, position, purpose, index)
        self.values.append(u)
        self.counters.append(counter_of(self.sequence, position, purpose, index))
        return u

    def counters_array(self):
        return np.asarray(self.counters, dtype=np.uint32).reshape(-1, 4)
