"""Named kernel state: a record of arrays and scalars that a compiled kernel takes as one argument.

A setting's kernel module declares its state layout once, as the field names of a record type (a numba
``StructRef``), and the kernels read the fields by name (``state.arrivals``) instead of taking tens of positional
arrays. A record is made once per env or batch from the arrays the Python side keeps (they are shared, not
copied: the kernels write into them, the Python side reads them) and passed to every step. Passing it costs a
single reference (about 0.5 µs per call from Python, against about 0.1 µs per array for positional arrays).

A kernel module declares its record with :func:`declare_record`, from one field list::

    BATCH_FIELDS = ("t", "arrivals", ...)
    BatchType, Batch, batch_record = declare_record(__name__, "Batch", BATCH_FIELDS, "The batch's state record.")

``batch_record(t=..., arrivals=..., ...)`` makes a record (every field by name). The two classes must be bound
at module level under the names they are given (``Batch`` and ``BatchType`` here), as above: numba's on-disk
cache refers to them by module and name.

The record's field types are those of the values it is made from (an integer literal becomes ``int64``).
A record is not picklable: an object that holds one drops it when pickled or copied and makes it again from
its arrays (:class:`HoldsRecord`).

Inside compiled code, :func:`unowned` turns a record into a namedtuple of the same fields whose arrays have no
memory owner: a kernel that passes its state on to many helper calls per copy passes that namedtuple, whose
fields cost nothing to pass or read (a record's field or an owned array costs an atomic reference count on
every call and read).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from numba.core import cgutils, types
from numba.experimental import structref
from numba.extending import intrinsic, overload

from cluster_envs.common.numba_cache import cached_njit


class RecordType(types.StructRef):
    """Base of the record types: the field types of the values given, literals widened."""

    def preprocess_fields(self, fields):
        return tuple((name, types.unliteral(typ)) for name, typ in fields)


def field_values(names: tuple[str, ...], fields: dict[str, Any]) -> tuple[Any, ...]:
    """``fields`` in the order of ``names``; a ValueError names any field missing or unknown."""
    missing, unknown = [n for n in names if n not in fields], sorted(set(fields) - set(names))
    if missing or unknown:
        raise ValueError(f"record fields: missing {missing}, unknown {unknown}; the fields are {list(names)}")
    return tuple(fields[name] for name in names)


def declare_record(module: str, name: str, fields: tuple[str, ...], doc: str) -> tuple[type, type, Callable[..., Any]]:
    """A record type with ``fields``: its numba type class ``<name>Type``, its Python class ``name`` (docstring
    ``doc``) and its maker, which takes every field by name (:func:`field_values`; arrays are shared, not copied).
    The caller binds both classes in ``module`` (its ``__name__``) under these names, where numba's cache finds
    them."""
    type_class = structref.register(
        type(f"{name}Type", (RecordType,), {"__module__": module, "__doc__": f"The numba type of :class:`{name}`."})
    )
    proxy = type(name, (structref.StructRefProxy,), {"__module__": module, "__doc__": doc})
    structref.define_proxy(proxy, type_class, fields)
    pack = cached_njit(_packer(proxy))

    def make(**values: Any) -> Any:
        return pack(field_values(fields, values))

    make.__doc__ = f"The :class:`{name}` of ``values`` (every field of {list(fields)})."
    return type_class, proxy, make


def _packer(proxy: type) -> Callable[[tuple], Any]:
    def pack(values):
        return proxy(*values)  # compiled: the record's constructor (cached on disk, unlike calling the class)

    return pack


class HoldsRecord:
    """Mixin for an object that keeps a record in ``self.record``, made by its ``make_record()`` from arrays it
    also holds: pickling and copying leave the record out and make it again from the copied arrays."""

    record: Any

    def make_record(self) -> Any:
        raise NotImplementedError

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state.pop("record", None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self.record = self.make_record()


@intrinsic
def _strip_owner(typingctx, arr):
    """``arr`` without its memory owner: numba's reference counting of the result (an atomic operation on every
    call that passes it, however the callee is inlined or pruned) becomes a null test. Valid while ``arr``
    lives."""

    def codegen(context, builder, signature, args):
        array = cgutils.create_struct_proxy(signature.args[0])(context, builder, value=args[0])
        array.meminfo = cgutils.get_null_value(array.meminfo.type)
        return array._getvalue()

    return arr(arr), codegen


def strip_owner(value):
    """Compiled code only: an array without its memory owner (valid while the array lives); any other value as
    it is."""
    raise NotImplementedError("strip_owner runs in compiled code only")


@overload(strip_owner)
def _strip_owner_impl(value):
    if isinstance(value, types.Array):
        return lambda value: _strip_owner(value)
    return lambda value: value


def unowned(record, layout):
    """Compiled code only: the fields of ``record`` as a ``layout`` namedtuple (the class, whose fields are the
    record's), every array without its memory owner (:func:`strip_owner`; valid while the record lives)."""
    raise NotImplementedError("unowned runs in compiled code only")


@overload(unowned)
def _unowned_impl(record, layout):
    cls = layout.instance_class
    body = ", ".join(f"strip_owner(record.{name})" for name in cls._fields)
    namespace = {"cls": cls, "strip_owner": strip_owner}
    exec(f"def impl(record, layout):\n    return cls({body})\n", namespace)  # one constructor call per layout
    return namespace["impl"]
