"""adapter_api: the contract between the Oarlock core and device plugins.

Four interfaces: :class:`DeviceRuntime` (memory, copies, streams, events), kernels registered
per (op, device type, dtype) on a :class:`Registry`, :class:`Communicator` (collectives) and
:class:`Compiler` (compile access). The hooks a plugin implements are in
:mod:`adapter_api.hookspecs`; the ops it implements are in :mod:`adapter_api.primitives`.
This package imports nothing else of Oarlock's.
"""

from .communicator import REDUCE_OPS, Communicator, StagedCommunicator
from .compiler import Compiler, ProgramCache
from .errors import (
    CommunicationError,
    CompileError,
    ContractVersionError,
    DeviceError,
    DeviceMismatchError,
    KernelError,
    KernelNotFoundError,
    OarlockError,
    OpArgumentError,
    OutOfMemoryError,
    PluginError,
)
from .hookspecs import hookimpl, hookspec
from .primitives import PRIMITIVES, PrimitiveSpec
from .registry import KernelContext, KernelEntry, Registry
from .runtime import DeviceProperties, DeviceRuntime
from .version import ATTRS_SINCE, CONTRACT_VERSION, check_contract, takes_attr

__all__ = [
    "ATTRS_SINCE",
    "CONTRACT_VERSION",
    "PRIMITIVES",
    "REDUCE_OPS",
    "CommunicationError",
    "Communicator",
    "CompileError",
    "Compiler",
    "ContractVersionError",
    "DeviceError",
    "DeviceMismatchError",
    "DeviceProperties",
    "DeviceRuntime",
    "KernelContext",
    "KernelEntry",
    "KernelError",
    "KernelNotFoundError",
    "OarlockError",
    "OpArgumentError",
    "OutOfMemoryError",
    "PluginError",
    "PrimitiveSpec",
    "ProgramCache",
    "Registry",
    "StagedCommunicator",
    "check_contract",
    "takes_attr",
    "hookimpl",
    "hookspec",
]
