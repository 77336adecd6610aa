"""Block updates shared by the block kernels (:mod:`.gibbs`, :mod:`.metropolis`).

A block of ``target.structure.blocks`` holds variables that are conditionally independent
given the rest, so any kernel that updates each of them from its own conditional
(:func:`~numpyro_ugm.conditionals.block_logits`) updates the block in parallel and leaves
p(x) invariant. The kernels differ only in the rule that turns a block's conditional
log-probabilities into new values (a *draw rule*): Gibbs draws from them, Metropolis
proposes a different value and accepts it with the Metropolis-Hastings probability.
Everything else — the scan over blocks, index tables, random numbers, merging the new
values into the sites, sweeps, counting acceptances — lives here.

Random numbers are uniforms, drawn once per sweep for every variable of every block
(``num_uniforms`` per variable) and, with systematic scan, for all chains at once
(``Kernel.batch_step``): one call of the random-number generator per sweep instead of a
key split per block and per chain.
"""

import dataclasses
import functools
from typing import ClassVar, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ..runtime.checks import check_count
from ..conditionals import batch_aligned_zero, block_logits, gather
from .base import Kernel, KernelInfo, KernelSpec, standard_normals


@dataclasses.dataclass(frozen=True)
class BlockKernelSpec(KernelSpec):
    """Base of kernels that update the model's blocks (``target.blocks``) one at a time, each
    block's variables in parallel by :meth:`draw` (subclasses define it and ``state``).

    Parameters
    ----------
    scan : {"systematic", "random"}
        ``"systematic"``: one step visits every block in order. ``"random"``: one step
        updates ``num_blocks`` blocks drawn uniformly at random (reversible).
    num_sweeps : int
        Number of such sweeps per ``step``.
    max_unrolled : int
        With systematic scan, models with at most this many blocks get each block's
        update compiled separately (gradients only with respect to the sites the block
        touches, static index tables); more blocks, and random scan, are updated in a
        ``lax.scan`` over padded index tables.
    backward : bool
        Systematic scan visits the blocks in reverse order (see :meth:`reverse`).
    """

    scan: str = "systematic"
    num_sweeps: int = 1
    max_unrolled: int = 16
    backward: bool = False

    #: the kernel's state type: a NamedTuple holding only ``position``
    state: ClassVar[type] = None

    def num_uniforms(self, domain) -> int:
        """Uniforms the draw rule takes per variable of ``domain`` (default one)."""
        return 1

    def draw(self, uniforms, logits, domain, current):
        """New values of a block's variables of one site (the draw rule).

        Parameters
        ----------
        uniforms : array (n, num_uniforms(domain))
            Independent uniforms on [0, 1), for this draw only; for a real domain,
            standard normals instead (the uniforms by inversion,
            :func:`~numpyro_ugm.kernels.base.standard_normals`, computed for the whole
            sweep at once).
        logits : array (n, K)
            Their conditional log-probabilities (up to a constant per variable).
        domain : Domain
        current : array ``(n, *event)``
            Their current values (model representation).

        Returns
        -------
        values : array ``(n, *event)``
            New values, dtype of ``current``.
        accepted : bool array (n,) or None
            Which variables took a proposed value (``None``: all of them, as in Gibbs);
            counted in ``KernelInfo.acceptance_rate``.
        """
        raise NotImplementedError

    def reverse(self) -> "BlockKernelSpec":
        """The reverse operator: systematic scan with the block order reversed (random
        scan is reversible, so itself)."""
        if self.scan == "random":
            return self
        return dataclasses.replace(self, backward=not self.backward)

    def __post_init__(self):
        name = type(self).__name__
        if self.scan not in ("systematic", "random"):
            raise ValueError(f"{name}: scan must be 'systematic' or 'random', got {self.scan!r}")
        object.__setattr__(self, "num_sweeps",
                           check_count(name, "num_sweeps", self.num_sweeps))

    def build(self, target) -> Kernel:
        """The block kernel; on a model with real sites that are not in blocks
        (``structure.moved``), MALA moves them after each sweep (``mala(blocks=self)``;
        before it, for the reverse spec, ``backward=True``)."""
        if target.structure.moved:
            from .gradient import mala
            # the reverse of sweep-then-move is move-then-reversed-sweep
            return mala(blocks=self, blocks_first=not self.backward).build(target)
        return self.build_blocks(target)

    def build_blocks(self, target) -> Kernel:
        """The kernel that sweeps ``target.blocks`` (and nothing else)."""
        sweep = block_sweep(target, self.draw, self.num_uniforms, self.scan, self.backward,
                            self.max_unrolled)
        sweeps, state = int(self.num_sweeps), self.state

        def run(rng_key, position, logdensity_fn, chains=None):
            if sweeps == 1:
                return sweep(rng_key, position, logdensity_fn, chains)

            def body(i, carry):
                position, accepted, proposed = carry
                position, a, p = sweep(jax.random.fold_in(rng_key, i), position,
                                       logdensity_fn, chains)
                return position, accepted + a, proposed + p

            zero = jnp.zeros(() if chains is None else (chains,), jnp.float32)
            return jax.lax.fori_loop(0, sweeps, body, (position, zero, zero))

        def init(position, logdensity_fn=None):
            return state(dict(position))

        def step(rng_key, kernel_state, logdensity_fn, **unused):
            position, accepted, proposed = run(rng_key, kernel_state.position,
                                               logdensity_fn)
            return state(position), KernelInfo(accepted / proposed)

        def batch_step(rng_key, states, logdensity_fn):
            """Every chain of ``states`` (leading axis) steps, with the uniforms of all
            chains drawn at once from ``rng_key``."""
            chains = jax.tree.leaves(states.position)[0].shape[0]
            position, accepted, proposed = run(rng_key, states.position, logdensity_fn,
                                               chains)
            return state(position), KernelInfo(accepted / proposed)

        # random scan draws a color per chain: its chains step one by one (vmapped)
        return Kernel(init, step, batch_step=None if self.scan == "random" else batch_step)


class _Block(NamedTuple):
    """One block's update tables: per site, flat indices of its variables (``None``: the
    whole site), the merge table (see :func:`_merge_table`) and the mask of real entries
    among padded indices (``None``: all real)."""

    index: dict
    merge: dict
    real: dict | None = None


def block_sweep(target, draw, num_uniforms, scan, backward, max_unrolled):
    """``sweep(rng_key, position, logdensity_fn, chains=None) -> (position, accepted,
    proposed)``: one sweep over the blocks of ``m`` (see :class:`BlockKernelSpec` for
    ``scan``, ``backward`` and ``max_unrolled``), each block's variables updated by
    ``draw`` with ``num_uniforms(domain)`` uniforms each. The numbers of accepted and
    proposed updates are float32 scalars, or per chain when ``position`` holds
    ``chains`` chains along a leading axis (systematic scan only)."""
    structure, domains = target.structure, target.state_sites
    per_variable = {s: num_uniforms(d) for s, d in domains.items()}
    update = functools.partial(_update_block, draw, domains, structure.multilinear)

    def updated(uniforms, position, logdensity_fn, block, chains):
        """``update``, vmapped over the chains when there are several."""
        fn = functools.partial(update, logdensity_fn=logdensity_fn, block=block)
        return fn(uniforms, position) if chains is None else jax.vmap(fn)(uniforms, position)

    blocks = structure.blocks[::-1] if backward else structure.blocks
    if scan == "systematic" and len(blocks) <= max_unrolled:
        return _unrolled_sweep(blocks, domains, per_variable, updated)
    return _scanned_sweep(blocks, domains, per_variable, updated, scan)


def _update_block(draw, domains, multilinear, uniforms, position, logdensity_fn, block):
    """One block's variables drawn by ``draw`` from their conditionals: ``(position,
    accepted, proposed)`` (float32 counts of the block's real entries)."""
    zero = batch_aligned_zero(position)
    # a real site's indices stay unbatched: the indicator of its block, a scatter of
    # ones (gaussian_logits), is then a constant (1.6x faster lattice GMRF sweeps); so do
    # those given to a log-density's own conditionals, which batch their last gathers
    # themselves (an ERGM's block view): batched here, every table they index (a
    # block's nodes, their adjacency rows' dyads) would be gathered again per chain
    own = getattr(logdensity_fn, "conditional_logits", None) is not None
    index = {s: None if i is None else i if own or not domains[s].finite else i + zero
             for s, i in block.index.items()}
    logits = block_logits(logdensity_fn, position, domains, index, multilinear)
    new = dict(position)
    accepted = proposed = jnp.zeros((), jnp.float32)
    for s in index:
        d = domains[s]
        # the block's current values (unused by Gibbs, dropped by XLA); gathered by
        # the indices as given: batching them costs more here (64x64 Ising grid,
        # block Metropolis: 7 % slower) than it saves
        values, ok = draw(uniforms[s], logits[s], d, gather(position[s], d, block.index[s]))
        table = block.merge[s]
        if not (table is None or isinstance(table, _Scatter) or not d.finite):
            table = table + zero
        new[s] = _merge(position[s], d, values, table)
        real = None if block.real is None else block.real[s]
        count = (jnp.sum(real, dtype=jnp.float32) if real is not None
                 else float(values.shape[0]))
        proposed = proposed + count
        if ok is None:
            accepted = accepted + count
        else:
            ok = ok if real is None else ok & real
            accepted = accepted + jnp.sum(ok, dtype=jnp.float32)
    return new, accepted, proposed


def _unrolled_sweep(blocks, domains, per_variable, updated):
    """A systematic sweep with one update per block written out (few blocks)."""
    unrolled = [_Block(b, {s: _merge_table(domains[s], i) for s, i in b.items()})
                for b in blocks]
    layout = _UniformLayout([{s: domains[s].num_variables if i is None else len(i)
                              for s, i in b.items()} for b in blocks], per_variable,
                            domains)

    def sweep(rng_key, position, logdensity_fn, chains=None):
        uniforms = layout.draw(rng_key, chains, position)
        accepted = proposed = jnp.zeros((), jnp.float32)
        for u, block in zip(uniforms, unrolled):
            position, a, p = updated(u, position, logdensity_fn, block, chains)
            accepted, proposed = accepted + a, proposed + p
        return position, accepted, proposed

    return sweep


def _scanned_sweep(blocks, domains, per_variable, updated, scan):
    """A sweep scanned over the colours: one update for any colour, from padded index
    tables. Random scan always goes this way: under vmap each chain draws its own
    colour, and a lax.switch over per-block updates would run every branch for every
    chain."""
    num_blocks = len(blocks)
    index_tables, merge_tables, lengths = _padded_tables(blocks, domains)
    layout = _UniformLayout([{s: t.shape[1] for s, t in index_tables.items()}],
                            per_variable, domains)

    def update_color(rng_key, color, position, logdensity_fn, chains):
        block = _Block({s: t[color] for s, t in index_tables.items()},
                       {s: _Scatter(t.index[color]) if isinstance(t, _Scatter) else t[color]
                        for s, t in merge_tables.items()},
                       {s: jnp.arange(index_tables[s].shape[1]) < n[color]
                        for s, n in lengths.items()})
        uniforms, = layout.draw(rng_key, chains, position)
        return updated(uniforms, position, logdensity_fn, block, chains)

    if scan == "systematic":
        def choose(key, i):
            return key, i

        colors = jnp.arange(num_blocks)
    else:
        def choose(key, unused):
            key, pick = jax.random.split(key)
            return key, jax.random.randint(pick, (), 0, num_blocks)

        colors = jnp.zeros(num_blocks, jnp.int32)

    def sweep(rng_key, position, logdensity_fn, chains=None):
        def body(carry, xs):
            position, accepted, proposed = carry
            key, color = choose(*xs)
            position, a, p = update_color(key, color, position, logdensity_fn, chains)
            return (position, accepted + a, proposed + p), None

        zero = jnp.zeros(() if chains is None else (chains,), jnp.float32)
        keys = jax.random.split(rng_key, num_blocks)
        return jax.lax.scan(body, (position, zero, zero), (keys, colors))[0]

    return sweep


class _UniformLayout:
    """Where the uniforms of a sequence of blocks sit in one draw: per block, site ->
    (start, count, uniforms per variable); ``normal`` holds the (start, stop) runs of
    the draw that real sites take as standard normals."""

    def __init__(self, counts, per_variable, domains):
        self.slots, start, real = [], 0, []
        for block in counts:
            slot = {}
            for s, n in block.items():
                slot[s] = (start, n, per_variable[s])
                if not domains[s].finite:
                    real.append((start, start + n * per_variable[s]))
                start += n * per_variable[s]
            self.slots.append(slot)
        self.width = start
        self.normal = []
        for a, b in real:  # adjacent slots make one run
            if self.normal and self.normal[-1][1] == a:
                a = self.normal.pop()[0]
            self.normal.append((a, b))

    def draw(self, rng_key, chains, position):
        """Per block, site -> uniforms ``([chains,] count, per_variable)``, from one
        call of the generator, in the floating-point dtype of the state; a real site's
        are standard normals, inverted once per run of the draw (the inversion is then
        one vectorized pass over the sweep, not part of each block's update)."""
        lead = () if chains is None else (chains,)
        u = jax.random.uniform(rng_key, lead + (self.width,), _float_dtype(position))
        runs = [(a, b, _normals_apart(u[..., a:b])) for a, b in self.normal]

        def numbers(a, count):
            for start, stop, z in runs:
                if start <= a < stop:
                    return z[..., a - start:a - start + count]
            return u[..., a:a + count]

        return [{s: numbers(a, n * k).reshape(lead + (n, k))
                 for s, (a, n, k) in slot.items()} for slot in self.slots]


#: runs of at least this many uniforms (per chain) are inverted in a loop of two halves
MIN_LOOPED_NORMALS = 4096


def _normals_apart(uniforms):
    """:func:`~numpyro_ugm.kernels.base.standard_normals` of ``uniforms`` (``(...,
    width)``), computed apart from the blocks' updates: for large runs, in a loop over two
    halves, whose boundary keeps XLA from splitting the inversion's cheap parts off into
    every consumer (each block's update, where they are evaluated through the block's
    gather, unvectorized: 100 x 100 lattice GMRF sweeps 1.3x slower). The same numbers."""
    width = uniforms.shape[-1]
    if width < MIN_LOOPED_NORMALS:
        return standard_normals(uniforms)
    half = (width + 1) // 2
    padded = jnp.pad(uniforms, [(0, 0)] * (uniforms.ndim - 1) + [(0, 2 * half - width)],
                     constant_values=0.5)
    halves = jax.lax.map(standard_normals, jnp.stack([padded[..., :half],
                                                       padded[..., half:]]))
    return jnp.concatenate([halves[0], halves[1]], -1)[..., :width]


def _float_dtype(position):
    """The floating-point dtype of the state (its uniforms are drawn in it)."""
    for leaf in jax.tree.leaves(position):
        if jnp.issubdtype(leaf.dtype, jnp.floating):
            return leaf.dtype
    return jnp.result_type(float)


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

#: blocks under 1 / SMALL_BLOCK_RATIO of a site's variables (an ERGM's matchings: 50 of
#: 4,950 dyads on 100 nodes) merge by scatter, writing only their own entries, instead of
#: gathering the whole site (1.3x faster 100-node ERGM sweeps)
SMALL_BLOCK_RATIO = 16


class _Scatter(NamedTuple):
    """Flat indices a block's new values are scattered to (out of bounds: dropped)."""

    index: jax.Array


def _padded_tables(blocks, domains):
    """Per site, a (num_blocks, max_block_size) table of flat indices (padded with 0, a
    valid index whose draws the merge ignores), a (num_blocks, num_variables) merge
    table (see :func:`_merge_table`; identity on blocks that do not touch the site) and
    the (num_blocks,) numbers of real (unpadded) entries. When the merge table would
    exceed :data:`MAX_MERGE_TABLE` entries (many blocks: an ERGM's single-dyad blocks),
    or the blocks are small (:data:`SMALL_BLOCK_RATIO`), a (num_blocks, max_block_size)
    scatter index padded out of bounds replaces it."""
    index_tables, merge_tables, lengths = {}, {}, {}
    for s, d in domains.items():
        rows = []
        for block in blocks:
            idx = block.get(s, np.zeros(0, np.int64))
            rows.append(np.arange(d.num_variables) if idx is None else np.asarray(idx))
        width = max(len(r) for r in rows)
        if width == 0:
            continue
        index = np.zeros((len(blocks), width), np.int32)
        lengths[s] = jnp.asarray([len(r) for r in rows], jnp.int32)
        if (len(blocks) * d.num_variables > MAX_MERGE_TABLE
                or width * SMALL_BLOCK_RATIO < d.num_variables):
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
    return index_tables, merge_tables, lengths
