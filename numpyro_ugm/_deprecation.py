"""Old spellings kept working for a release, with a ``DeprecationWarning`` that names the
new one (as numpyro and optax do).

* :func:`renamed_arguments` decorates a frozen-dataclass configuration (kernel specs,
  estimators): old keyword names, the old positional order and old attribute names keep
  working;
* :func:`mapping_access` decorates an info ``NamedTuple`` that replaced a dict: indexing by
  name, ``get``, ``keys`` and ``items`` keep working.
"""

import functools
import inspect
import warnings
from typing import Any, Callable, Mapping, Optional, Sequence


def warn_deprecated(message: str, stacklevel: int = 3) -> None:
    """Issue a ``DeprecationWarning`` (``stacklevel`` counted from the caller)."""
    warnings.warn(message, DeprecationWarning, stacklevel=stacklevel)


def renamed_arguments(renamed: Optional[Mapping[str, str]] = None,
                      legacy_order: Optional[Sequence[str]] = None) -> Callable:
    """Class decorator: keep the old argument names and order of a dataclass working.

    Parameters
    ----------
    renamed : dict of old name -> new name, optional
        Keyword arguments (and attributes) renamed; the old keyword is accepted and the
        old attribute readable, each with a ``DeprecationWarning`` naming the new one.
    legacy_order : sequence of str, optional
        The old positional order, in new names. Positional arguments beyond those the
        new ``__init__`` takes positionally (e.g. a now keyword-only ``kernel``) are
        matched to it, with a ``DeprecationWarning`` asking for the keyword.
    """
    renamed = dict(renamed or {})
    legacy_order = tuple(legacy_order or ())

    def decorate(cls):
        init = cls.__init__
        owner = cls.__name__
        positional = [p.name for p in list(inspect.signature(init).parameters.values())[1:]
                      if p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD]
        if legacy_order and tuple(legacy_order[:len(positional)]) != tuple(positional):
            raise AssertionError(f"{owner}: legacy order {legacy_order} does not start with "
                                 f"the positional parameters {positional}")

        @functools.wraps(init)
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            for old, new in renamed.items():
                if old in kwargs:
                    if new in kwargs:
                        raise TypeError(f"{owner}: got both {old!r} (deprecated) and {new!r}")
                    warn_deprecated(f"{owner}: {old!r} is deprecated, use {new!r}")
                    kwargs[new] = kwargs.pop(old)
            if len(args) > len(positional):
                extra_names = legacy_order[len(positional):]
                extra = args[len(positional):]
                if len(extra) > len(extra_names):
                    raise TypeError(f"{owner} takes at most {len(positional)} positional "
                                    f"arguments ({len(args)} given)")
                for name, value in zip(extra_names, extra):
                    if name in kwargs:
                        raise TypeError(f"{owner}: got multiple values for {name!r}")
                    warn_deprecated(f"{owner}: passing {name!r} positionally is deprecated, "
                                    f"use {name}=...")
                    kwargs[name] = value
                args = args[:len(positional)]
            init(self, *args, **kwargs)

        def __getattr__(self, name: str) -> Any:
            # only called when normal lookup fails: old attribute names
            if name in renamed:
                warn_deprecated(f"{owner}: {name!r} is deprecated, use {renamed[name]!r}")
                return getattr(self, renamed[name])
            raise AttributeError(f"{owner!r} object has no attribute {name!r}")

        cls.__init__ = __init__
        if renamed:
            cls.__getattr__ = __getattr__
        return cls

    return decorate


def mapping_access(cls):
    """Decorator of an info ``NamedTuple`` that replaced a dict of diagnostics: ``info[name]``,
    ``info.get(name, default)``, ``info.keys()`` and ``info.items()`` keep working, with a
    ``DeprecationWarning`` (use the attributes, or ``info._asdict()``). Integer indexing
    and everything else of the tuple are unchanged."""
    message = (f"{cls.__name__} is a NamedTuple, no longer a dict: use attributes "
               f"(info.{cls._fields[0]}) or info._asdict()")
    getitem = cls.__getitem__

    def __getitem__(self, key):
        if isinstance(key, str):
            warn_deprecated(message)
            if key not in self._fields:
                raise KeyError(key)
            return getattr(self, key)
        return getitem(self, key)

    def get(self, key, default=None):
        warn_deprecated(message)
        return getattr(self, key) if key in self._fields else default

    def keys(self):
        warn_deprecated(message)
        return self._asdict().keys()

    def items(self):
        warn_deprecated(message)
        return self._asdict().items()

    cls.__getitem__, cls.get, cls.keys, cls.items = __getitem__, get, keys, items
    return cls
