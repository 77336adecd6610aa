"""Block Gibbs sampling with blocks found from the model (no hand-written conditionals)."""

import dataclasses
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ..structure import conditional_logits, exact_conditional_logits, scatter
from .base import Kernel, KernelInfo, KernelSpec, sample_labels


class GibbsState(NamedTuple):
    """State of one Gibbs chain: the position (dict of site -> model values)."""

    position: dict


@dataclasses.dataclass(frozen=True)
class gibbs(KernelSpec):
    """Block Gibbs sampler over the model's coloring (``m.blocks``).

    Each block holds conditionally independent variables, updated together from their
    exact conditionals: read off one gradient for multilinear potentials, or computed by
    evaluating the log-density at each value otherwise.

    Parameters
    ----------
    scan : {"systematic", "random"}
        ``"systematic"``: one step visits every block in order. ``"random"``: one step
        updates ``num_blocks`` blocks drawn uniformly at random (reversible).
    sweeps : int
        Number of such sweeps per ``step``.
    max_unrolled : int
        Models with at most this many blocks get each block's update compiled separately
        (gradients only with respect to the sites the block touches); more blocks are
        updated in a ``lax.scan`` over padded index tables.
    """

    scan: str = "systematic"
    sweeps: int = 1
    max_unrolled: int = 16

    def __post_init__(self):
        if self.scan not in ("systematic", "random"):
            raise ValueError(f"gibbs: scan must be 'systematic' or 'random', got {self.scan!r}")
        if int(self.sweeps) < 1:
            raise ValueError(f"gibbs: sweeps must be >= 1, got {self.sweeps}")

    def build(self, m):
        structure, domains = m.structure, m.state_sites
        logits_fn = (conditional_logits if structure.multilinear
                     else exact_conditional_logits)

        def update(rng_key, position, logdensity_fn, block):
            logits = logits_fn(logdensity_fn, position, domains, block)
            new = dict(position)
            for key, (s, idx) in zip(jax.random.split(rng_key, len(block)), block.items()):
                labels = sample_labels(key, logits[s])
                values = domains[s].label_to_model(labels, position[s].dtype)
                new[s] = scatter(position[s], domains[s], idx, values)
            return new

        blocks = structure.blocks
        num_blocks = len(blocks)
        unrolled = num_blocks <= self.max_unrolled
        if unrolled:
            branches = [lambda k, x, f, b=b: update(k, x, f, b) for b in blocks]

            def update_color(rng_key, color, position, logdensity_fn):
                return jax.lax.switch(color, branches, rng_key, position, logdensity_fn)
        else:
            tables = _padded_tables(blocks, domains)

            def update_color(rng_key, color, position, logdensity_fn):
                block = {s: t[color] for s, t in tables.items()}
                return update(rng_key, position, logdensity_fn, block)

        if self.scan == "systematic" and unrolled:
            def sweep(rng_key, position, logdensity_fn):
                for key, block in zip(jax.random.split(rng_key, num_blocks), blocks):
                    position = update(key, position, logdensity_fn, block)
                return position
        elif self.scan == "systematic":
            def sweep(rng_key, position, logdensity_fn):
                def body(position, xs):
                    key, color = xs
                    return update_color(key, color, position, logdensity_fn), None

                keys = jax.random.split(rng_key, num_blocks)
                return jax.lax.scan(body, position, (keys, jnp.arange(num_blocks)))[0]
        else:
            def sweep(rng_key, position, logdensity_fn):
                def body(position, key):
                    key, pick = jax.random.split(key)
                    color = jax.random.randint(pick, (), 0, num_blocks)
                    return update_color(key, color, position, logdensity_fn), None

                return jax.lax.scan(body, position, jax.random.split(rng_key, num_blocks))[0]

        sweeps = int(self.sweeps)

        def init(position, logdensity_fn=None):
            return GibbsState(dict(position))

        def step(rng_key, state, logdensity_fn, **unused):
            position = state.position
            if sweeps == 1:
                position = sweep(rng_key, position, logdensity_fn)
            else:
                position = jax.lax.fori_loop(
                    0, sweeps, lambda i, x: sweep(jax.random.fold_in(rng_key, i), x,
                                                  logdensity_fn), position)
            return GibbsState(position), KernelInfo(jnp.ones(()))

        return Kernel(init, step)


def _padded_tables(blocks, domains):
    """Per site, a (num_blocks, max_block_size) table of flat indices, padded with an
    out-of-range index that scatters drop."""
    tables = {}
    for s, d in domains.items():
        rows = []
        for block in blocks:
            idx = block.get(s, np.zeros(0, np.int64))
            rows.append(np.arange(d.num_variables) if idx is None else np.asarray(idx))
        width = max(len(r) for r in rows)
        if width == 0:
            continue
        table = np.full((len(blocks), width), d.num_variables, np.int64)
        for c, r in enumerate(rows):
            table[c, :len(r)] = r
        tables[s] = jnp.asarray(table)
    return tables
