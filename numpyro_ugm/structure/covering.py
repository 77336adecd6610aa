"""One structure for every example of a conditional model (CRF).

A CRF's interaction graph may depend on its inputs (an adjacency matrix per example), so
the structure :func:`~numpyro_ugm.structure.analyze` finds for the inputs the model was
traced with need not hold for the others. :func:`cover` checks a structure's blocks on
every example and joins the interactions it finds, so that the blocks hold for all of
them; ``UGM.for_inputs`` (and ``Target.bind`` on a concrete example) call it.

Like the rest of :mod:`numpyro_ugm.structure`, this module knows nothing of
:class:`~numpyro_ugm.model.UGM`: it works on a log-potential ``(params, state, inputs) ->
scalar``, the domains and a sampler of random parameters.
"""

from collections.abc import Callable, Mapping
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from ..conditionals import conditional_logits, exact_conditional_logits
from .discovery import probe_points
from .graph import Structure, colored, unique_pairs

__all__ = ["cover"]


def _change_detector(log_potential, domains, offsets, multilinear):
    """``(detect, example_chunk, mask_chunk)``: ``detect(points, masks, inputs) -> (B, M,
    V)`` bool, jitted, says for each example b of a chunk of ``inputs`` (leading axis B)
    and each mask m over the V variables whether moving the masked variables from a probe
    point's ``state`` to its ``other`` values changes the conditional logits of each
    variable at some point (``points``: the probe triples stacked; a non-finite new
    value counts as a change, an example whose logits at ``state`` are not finite has
    none). Conditionals come from the gradient (multilinear) or from evaluating f at each
    value, then fewer examples and masks go in one call (memory)."""
    whole = {s: None for s in domains}
    conditionals = conditional_logits if multilinear else exact_conditional_logits

    def logits(params, x, inputs):
        out = conditionals(lambda y: log_potential(params, y, inputs), x, domains, whole)
        return [v - v[:, :1] for v in out.values()]

    def at_point(point, masks, inputs):
        params, state, other = point
        base = logits(params, state, inputs)
        finite = jnp.all(jnp.stack([jnp.all(jnp.isfinite(b)) for b in base]))

        def per_mask(mask):
            x = {}
            for k, (s, d) in enumerate(domains.items()):
                where = mask[offsets[k]:offsets[k + 1]].reshape(
                    d.batch_shape + (1,) * len(d.event_shape))
                x[s] = jnp.where(where, other[s], state[s])
            new = logits(params, x, inputs)
            return jnp.concatenate([jnp.any(~(jnp.abs(n - b) <= 1e-4 * (1 + jnp.abs(b))), -1)
                                    for n, b in zip(new, base)])

        return jax.vmap(per_mask)(masks) & finite

    def one(points, masks, inputs):  # the probe points one after the other (memory)
        return jnp.any(jax.lax.map(lambda p: at_point(p, masks, inputs), points), axis=0)

    chunk = 16 if multilinear else 4
    return jax.jit(jax.vmap(one, (None, None, 0))), chunk, chunk


def _changes(detector, points, inputs, examples, masks):
    """Run the ``detector`` of :func:`_change_detector` on the ``examples`` (indices
    into the leading axis of ``inputs``) and ``masks`` (M, V) in chunks of fixed size
    (one compiled program for any number of examples and masks); yield ``(example
    positions, mask positions, changes)``."""
    detect, example_chunk, mask_chunk = detector
    for e in range(0, len(examples), example_chunk):
        rows = slice(e, min(e + example_chunk, len(examples)))
        take = np.resize(examples[rows], example_chunk)  # padded with repeats
        chunk = jax.tree.map(lambda a: a[take], inputs)
        for j in range(0, len(masks), mask_chunk):
            cols = slice(j, min(j + mask_chunk, len(masks)))
            padded = np.zeros((mask_chunk, masks.shape[1]), bool)
            padded[:cols.stop - cols.start] = masks[cols]
            found = np.asarray(detect(points, padded, chunk))
            yield rows, cols, found[:rows.stop - rows.start, :cols.stop - cols.start]


def cover(structure: Structure, log_potential: Callable[[dict, dict, Any], Any],
          domains: Mapping, random_params: Callable[[jax.Array, np.random.Generator], dict],
          inputs: Any, rng_key: jax.Array | None = None, num_points: int = 2,
          num_interior: int = 2, cache: dict | None = None) -> Structure:
    """A structure whose blocks are valid for every example of a conditional model.

    A CRF's interaction graph may depend on its inputs (an adjacency matrix per
    example). ``structure`` (found for one example) is checked on every example: at
    random parameters and states (domain and interior points, as in
    :func:`~numpyro_ugm.structure.analyze`),
    moving the variables of one block must leave the conditionals of that block's
    variables unchanged. Where it does not, the interactions of the variables concerned
    in those examples are found by moving them one at a time, added to the graph, and
    the graph is colored again, until the check passes on every example.

    Parameters
    ----------
    structure : Structure
        The structure found for one example (e.g. ``Target.structure``).
    log_potential : callable
        ``(params, state, inputs) -> scalar``: f(x; θ, u) for one example's inputs.
    domains : dict of str -> Domain
    random_params : callable
        As for :func:`~numpyro_ugm.structure.analyze`.
    inputs : pytree of arrays
        The examples' inputs, leading axis = examples.
    rng_key : jax PRNGKey, optional
        Key for the random probes (fixed default).
    num_points, num_interior : int
        Random domain and interior probes.
    cache : dict, optional
        Keeps the compiled check between calls (e.g. a model's compile cache entry).

    Returns
    -------
    Structure
        ``structure`` itself when it holds for every example, else the structure of
        its graph joined with the interactions found.

    Raises
    ------
    ValueError
        When a block's variables depend on each other in some example but moving them
        one at a time finds no interaction (naming the example and the variables).
    """
    if structure.edges is None or structure.declared:  # complete, or the factors' own
        return structure
    rng_key = jax.random.PRNGKey(20100621) if rng_key is None else rng_key
    cache = {} if cache is None else cache
    offsets, multilinear = structure.offsets, structure.multilinear
    if multilinear not in cache:
        cache[multilinear] = _change_detector(log_potential, domains, offsets, multilinear)
    detector = cache[multilinear]
    key = jax.random.fold_in(rng_key, 2)
    points = (probe_points(domains, random_params, key, num_points, moved=True)
              + probe_points(domains, random_params, jax.random.fold_in(key, 1),
                              num_interior, interior=True, moved=True))
    points = jax.tree.map(lambda *a: np.stack([np.asarray(v) for v in a]), *points)
    num_examples = int(jax.tree.leaves(inputs)[0].shape[0])
    num_variables = structure.num_variables
    everyone = np.arange(num_examples)
    while True:
        colors = structure.colors
        masks = colors[None, :] == np.arange(colors.max() + 1)[:, None]
        conflicts = np.zeros((num_examples, num_variables), bool)
        for rows, cols, found in _changes(detector, points, inputs, everyone, masks):
            conflicts[rows] |= np.any(found & masks[None, cols], axis=1)
        if not conflicts.any():
            return structure
        flagged = np.flatnonzero(conflicts.any(0))
        neighbours = np.zeros((len(flagged), num_variables), bool)
        for _, cols, found in _changes(detector, points, inputs,
                                       np.flatnonzero(conflicts.any(1)),
                                       flagged[:, None] == np.arange(num_variables)):
            neighbours[cols] |= found.any(0)
        found = np.stack([np.repeat(flagged, neighbours.sum(1)),
                          np.nonzero(neighbours)[1]], 1)
        edges = unique_pairs(np.concatenate([structure.edges, found]))
        if len(edges) == len(structure.edges):
            example = int(np.flatnonzero(conflicts.any(1))[0])
            names = [_variable_name(structure, domains, v)
                     for v in np.flatnonzero(conflicts[example])]
            raise ValueError(
                f"example {example}: the variables {', '.join(names)} share a Gibbs "
                "block but their conditionals change when the block moves, and moving "
                "them one at a time finds no interaction; the blocks cannot be made "
                "valid for every example")
        structure = colored(domains, offsets, edges, multilinear)


def _variable_name(structure, domains, v):
    """``site[index]`` of the global variable ``v``."""
    k = int(np.searchsorted(structure.offsets, v, side="right")) - 1
    site = structure.sites[k]
    index = np.unravel_index(int(v - structure.offsets[k]), domains[site].batch_shape)
    return f"{site}[{', '.join(str(int(i)) for i in index)}]"
