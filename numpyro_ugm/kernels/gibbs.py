"""Block Gibbs sampling with blocks found from the model (no hand-written conditionals)."""

import dataclasses
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from .._checks import check_count
from .._deprecation import renamed_arguments
from ..conditionals import block_logits
from .base import Kernel, KernelInfo, KernelSpec, sample_values


class GibbsState(NamedTuple):
    """State of one Gibbs chain: the position (dict of site -> model values)."""

    position: dict


@renamed_arguments({"sweeps": "num_mcmc_steps"})
@dataclasses.dataclass(frozen=True)
class gibbs(KernelSpec):
    """Block Gibbs sampler over the model's coloring (``m.blocks``).

    Each block holds conditionally independent variables, updated together from their
    exact conditionals: read off one gradient for multilinear potentials, or computed by
    evaluating the log-density at each value otherwise. Random numbers are drawn for the
    block's variables only, and the new values are merged into the site by one gather
    through a precomputed table (cheaper than a scatter).

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

        def update(rng_key, position, logdensity_fn, block, merge):
            # block: site -> flat indices of the block's variables (None: whole site);
            # merge: site -> gather table into concat(old, new) (None: whole site)
            zero = _batch_aligned_zero(position)
            block = {s: None if i is None else i + zero for s, i in block.items()}
            logits = block_logits(logdensity_fn, position, domains, block,
                                  structure.multilinear)
            new = dict(position)
            for key, s in zip(jax.random.split(rng_key, len(block)), block):
                values = sample_values(key, logits[s], domains[s], position[s].dtype)
                table = (None if merge[s] is None else merge[s] if isinstance(
                    merge[s], _Scatter) else merge[s] + zero)
                new[s] = _merge(position[s], domains[s], values, table)
            return new

        blocks = structure.blocks[::-1] if self.backward else structure.blocks
        num_blocks = len(blocks)
        unrolled = num_blocks <= self.max_unrolled
        if self.scan == "systematic" and unrolled:
            merges = [{s: _merge_table(domains[s], idx) for s, idx in b.items()}
                      for b in blocks]

            def sweep(rng_key, position, logdensity_fn):
                keys = jax.random.split(rng_key, num_blocks)
                for key, block, merge in zip(keys, blocks, merges):
                    position = update(key, position, logdensity_fn, block, merge)
                return position
        else:
            # One update for any color, from padded index tables. Random scan always
            # goes this way: under vmap each chain draws its own color, and a lax.switch
            # over per-block updates would run every branch for every chain.
            index_tables, merge_tables = _padded_tables(blocks, domains)

            def update_color(rng_key, color, position, logdensity_fn):
                block = {s: t[color] for s, t in index_tables.items()}
                merge = {s: _Scatter(t.index[color]) if isinstance(t, _Scatter) else t[color]
                         for s, t in merge_tables.items()}
                return update(rng_key, position, logdensity_fn, block, merge)

            if self.scan == "systematic":
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

                    keys = jax.random.split(rng_key, num_blocks)
                    return jax.lax.scan(body, position, keys)[0]

        sweeps = int(self.num_mcmc_steps)

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
    """The site ``x`` with the block's variables set to ``values`` (see _merge_table;
    a ``_Scatter`` holds the block's indices instead, padded out of bounds)."""
    if table is None:
        return values.reshape(x.shape).astype(x.dtype)
    if isinstance(table, _Scatter):
        flat = x.reshape((domain.num_variables,) + domain.event_shape)
        flat = flat.at[table.index].set(values.astype(x.dtype), mode="drop")
        return flat.reshape(x.shape)
    flat = x.reshape((domain.num_variables,) + domain.event_shape)
    both = jnp.concatenate([flat, values.astype(x.dtype)], axis=0)
    return both.at[table].get(mode="promise_in_bounds",
                              unique_indices=True).reshape(x.shape)


#: largest (num_blocks × num_variables) merge table; above it blocks merge by scatter
MAX_MERGE_TABLE = 2 ** 24


class _Scatter(NamedTuple):
    """Flat indices a block's new values are scattered to (out of bounds: dropped)."""

    index: jax.Array


def _padded_tables(blocks, domains):
    """Per site, a (num_blocks, max_block_size) table of flat indices (padded with 0, a
    valid index whose draws the merge ignores) and a (num_blocks, num_variables) merge
    table (see :func:`_merge_table`; identity on blocks that do not touch the site), or,
    when that would exceed :data:`MAX_MERGE_TABLE` entries (many blocks: an ERGM's
    single-dyad blocks), a (num_blocks, max_block_size) scatter index padded with an
    out-of-bounds index."""
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
        if len(blocks) * d.num_variables > MAX_MERGE_TABLE:
            scatter = np.full((len(blocks), width), d.num_variables, np.int32)
            for c, r in enumerate(rows):
                index[c, :len(r)] = scatter[c, :len(r)] = r
            index_tables[s] = jnp.asarray(index)
            merge_tables[s] = _Scatter(jnp.asarray(scatter))
            continue
        merge = np.tile(np.arange(d.num_variables, dtype=np.int32), (len(blocks), 1))
        for c, r in enumerate(rows):
            index[c, :len(r)] = r
            merge[c, r] = d.num_variables + np.arange(len(r))
        index_tables[s] = jnp.asarray(index)
        merge_tables[s] = jnp.asarray(merge)
    return index_tables, merge_tables
