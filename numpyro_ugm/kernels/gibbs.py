"""Block Gibbs sampling with blocks found from the model (no hand-written conditionals)."""

import dataclasses
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from .._checks import check_count
from .._deprecation import renamed_arguments
from ..conditionals import block_logits
from .base import Kernel, KernelInfo, KernelSpec, values_from_uniforms


class GibbsState(NamedTuple):
    """State of one Gibbs chain: the position (dict of site -> model values)."""

    position: dict


@renamed_arguments({"sweeps": "num_mcmc_steps"})
@dataclasses.dataclass(frozen=True)
class gibbs(KernelSpec):
    """Block Gibbs sampler over the model's coloring (``m.blocks``).

    Each block holds conditionally independent variables, updated together from their
    exact conditionals: read off one gradient for multilinear potentials, or computed by
    evaluating the log-density at each value otherwise. One uniform is drawn per updated
    variable, for a whole sweep at once (and, with systematic scan, for all chains at
    once when the chains step together: ``Kernel.batch_step``); the new values are merged
    into the site by one gather through a precomputed table (cheaper than a scatter).

    Parameters
    ----------
    scan : {"systematic", "random"}
        ``"systematic"``: one step visits every block in order. ``"random"``: one step
        updates ``num_blocks`` blocks drawn uniformly at random (reversible).
    num_mcmc_steps : int
        Number of such sweeps per ``step`` (formerly ``sweeps``).
    max_unrolled : int
        With systematic scan, models with at most this many blocks get each block's
        update compiled separately (gradients only with respect to the sites the block
        touches, static index tables); more blocks, and random scan, are updated in a
        ``lax.scan`` over padded index tables.
    backward : bool
        Systematic scan visits the blocks in reverse order (see :meth:`reverse`).
    """

    scan: str = "systematic"
    num_mcmc_steps: int = 1
    max_unrolled: int = 16
    backward: bool = False

    def reverse(self) -> "gibbs":
        """The reverse operator: systematic scan with the block order reversed (random
        scan is reversible, so itself)."""
        if self.scan == "random":
            return self
        return dataclasses.replace(self, backward=not self.backward)

    def __post_init__(self):
        if self.scan not in ("systematic", "random"):
            raise ValueError(f"gibbs: scan must be 'systematic' or 'random', got {self.scan!r}")
        object.__setattr__(self, "num_mcmc_steps",
                           check_count("gibbs", "num_mcmc_steps", self.num_mcmc_steps))

    def build(self, m) -> Kernel:
        structure, domains = m.structure, m.state_sites

        def update(uniforms, position, logdensity_fn, block, merge):
            # uniforms: site -> one uniform per variable of the block;
            # block: site -> flat indices of the block's variables (None: whole site);
            # merge: site -> gather table into concat(old, new) (None: whole site)
            zero = _batch_aligned_zero(position)
            block = {s: None if i is None else i + zero for s, i in block.items()}
            logits = block_logits(logdensity_fn, position, domains, block,
                                  structure.multilinear)
            new = dict(position)
            for s in block:
                values = values_from_uniforms(uniforms[s], logits[s], domains[s],
                                              position[s].dtype)
                table = None if merge[s] is None else merge[s] + zero
                new[s] = _merge(position[s], domains[s], values, table)
            return new

        def over(chains, fn):
            """``fn`` on one chain, or vmapped over a leading axis of ``chains``."""
            return fn if chains is None else jax.vmap(fn)

        def draw(rng_key, chains, width, position):
            """Uniforms for ``width`` variables (of each of ``chains`` chains)."""
            shape = (width,) if chains is None else (chains, width)
            return jax.random.uniform(rng_key, shape, _uniform_dtype(position))

        blocks = structure.blocks[::-1] if self.backward else structure.blocks
        num_blocks = len(blocks)
        unrolled = num_blocks <= self.max_unrolled
        if self.scan == "systematic" and unrolled:
            merges = [{s: _merge_table(domains[s], idx) for s, idx in b.items()}
                      for b in blocks]
            slices, width = _uniform_slices(blocks, domains)

            def sweep(rng_key, position, logdensity_fn, chains=None):
                # one uniform per variable of the sweep, drawn at once
                u = draw(rng_key, chains, width, position)
                for block, merge, where in zip(blocks, merges, slices):
                    position = over(chains, lambda u, x, block=block, merge=merge: update(
                        u, x, logdensity_fn, block, merge))(
                        {s: u[..., a:b] for s, (a, b) in where.items()}, position)
                return position
        else:
            # One update for any color, from padded index tables. Random scan always
            # goes this way: under vmap each chain draws its own color, and a lax.switch
            # over per-block updates would run every branch for every chain.
            index_tables, merge_tables = _padded_tables(blocks, domains)
            widths = {s: t.shape[1] for s, t in index_tables.items()}
            offsets = np.cumsum([0] + list(widths.values()))

            def update_color(rng_key, color, position, logdensity_fn, chains=None):
                u = draw(rng_key, chains, int(offsets[-1]), position)
                block = {s: t[color] for s, t in index_tables.items()}
                merge = {s: t[color] for s, t in merge_tables.items()}
                uniforms = {s: u[..., a:b] for s, a, b in zip(widths, offsets, offsets[1:])}
                return over(chains, lambda u, x: update(u, x, logdensity_fn, block, merge))(
                    uniforms, position)

            if self.scan == "systematic":
                def sweep(rng_key, position, logdensity_fn, chains=None):
                    def body(position, xs):
                        key, color = xs
                        return update_color(key, color, position, logdensity_fn,
                                            chains), None

                    keys = jax.random.split(rng_key, num_blocks)
                    return jax.lax.scan(body, position, (keys, jnp.arange(num_blocks)))[0]
            else:
                def sweep(rng_key, position, logdensity_fn, chains=None):
                    def body(position, key):
                        key, pick = jax.random.split(key)
                        color = jax.random.randint(pick, (), 0, num_blocks)
                        return update_color(key, color, position, logdensity_fn), None

                    keys = jax.random.split(rng_key, num_blocks)
                    return jax.lax.scan(body, position, keys)[0]

        sweeps = int(self.num_mcmc_steps)

        def sweeps_of(rng_key, position, logdensity_fn, chains=None):
            if sweeps == 1:
                return sweep(rng_key, position, logdensity_fn, chains)
            return jax.lax.fori_loop(
                0, sweeps, lambda i, x: sweep(jax.random.fold_in(rng_key, i), x,
                                              logdensity_fn, chains), position)

        def init(position, logdensity_fn=None):
            return GibbsState(dict(position))

        def step(rng_key, state, logdensity_fn, **unused):
            position = sweeps_of(rng_key, state.position, logdensity_fn)
            return GibbsState(position), KernelInfo(jnp.ones(()))

        def batch_step(rng_key, states, logdensity_fn):
            """Every chain of ``states`` (leading axis) steps with uniforms drawn for all
            of them at once from ``rng_key`` (no key per chain)."""
            chains = jax.tree.leaves(states.position)[0].shape[0]
            position = sweeps_of(rng_key, states.position, logdensity_fn, chains)
            return GibbsState(position), KernelInfo(jnp.ones((chains,)))

        # random scan draws a color per chain: its chains step one by one (vmapped)
        return Kernel(init, step,
                      batch_step=None if self.scan == "random" else batch_step)


def _uniform_dtype(position):
    """The floating-point dtype of the state (uniforms are drawn in it)."""
    for leaf in jax.tree.leaves(position):
        if jnp.issubdtype(leaf.dtype, jnp.floating):
            return leaf.dtype
    return jnp.result_type(float)


def _uniform_slices(blocks, domains):
    """Where each block's variables take their uniforms in one draw for a sweep: per
    block, site -> (start, stop); and the draw's width (one per variable of each block)."""
    slices, start = [], 0
    for block in blocks:
        where = {}
        for s, idx in block.items():
            count = domains[s].num_variables if idx is None else len(idx)
            where[s] = (start, start + count)
            start += count
        slices.append(where)
    return slices, start


def _batch_aligned_zero(position):
    """An int32 zero that depends on ``position``, to add to static gather indices.

    Under ``vmap`` over chains, a gather whose indices are not batched is laid out by XLA
    with the index dimension first and the chain dimension last, and transposing back
    costs more than the gather itself; indices that are batched (this zero is, whenever
    the position is) give a chain-major gather. ``where(v == v, 0, 0)`` is 0 for any v
    (NaN included) and XLA folds it away.
    """
    v = jax.tree.leaves(position)[0].reshape(-1)[0]
    return jnp.where(v == v, 0, 0).astype(jnp.int32)


def _merge_table(domain, idx):
    """Gather table that merges new values of the variables ``idx`` into a site.

    Entry i is i for a variable outside the block and ``num_variables + j`` for the j-th
    variable of the block, so that ``concat([old, new])[table]`` is the updated site.
    ``None`` when the block is the whole site.
    """
    if idx is None:
        return None
    n = domain.num_variables
    table = np.arange(n)
    table[np.asarray(idx)] = n + np.arange(len(idx))
    return table.astype(np.int32)


def _merge(x, domain, values, table):
    """The site ``x`` with the block's variables set to ``values`` (see _merge_table)."""
    if table is None:
        return values.reshape(x.shape).astype(x.dtype)
    flat = x.reshape((domain.num_variables,) + domain.event_shape)
    both = jnp.concatenate([flat, values.astype(x.dtype)], axis=0)
    return both.at[table].get(mode="promise_in_bounds",
                              unique_indices=True).reshape(x.shape)


def _padded_tables(blocks, domains):
    """Per site, a (num_blocks, max_block_size) table of flat indices (padded with 0, a
    valid index whose draws the merge ignores) and a (num_blocks, num_variables) merge
    table (see :func:`_merge_table`; identity on blocks that do not touch the site)."""
    index_tables, merge_tables = {}, {}
    for s, d in domains.items():
        rows = []
        for block in blocks:
            idx = block.get(s, np.zeros(0, np.int64))
            rows.append(np.arange(d.num_variables) if idx is None else np.asarray(idx))
        width = max(len(r) for r in rows)
        if width == 0:
            continue
        index = np.zeros((len(blocks), width), np.int32)
        merge = np.tile(np.arange(d.num_variables, dtype=np.int32), (len(blocks), 1))
        for c, r in enumerate(rows):
            index[c, :len(r)] = r
            merge[c, r] = d.num_variables + np.arange(len(r))
        index_tables[s] = jnp.asarray(index)
        merge_tables[s] = jnp.asarray(merge)
    return index_tables, merge_tables
