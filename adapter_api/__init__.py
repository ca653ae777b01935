"""adapter_api: the contract between the Oarlock core and device plugins.

Four interfaces: :class:`DeviceRuntime` (memory, copies, streams, events), kernels registered
per (op, device type, dtype) on a :class:`Registry`, :class:`Communicator` (collectives) and
:class:`Compiler` (compile access). The hooks a plugin implements are in
:mod:`adapter_api.hookspecs`; the ops it implements are in :mod:`adapter_api.primitives`.
This package imports nothing else of Oarlock's.
"""

from .communicator import REDUCE_OPS, Communicator, PendingCollective, StagedCommunicator, defines_own
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
from .version import ATTRS_SINCE, CONTRACT_VERSION, METHODS_SINCE, calls_method, check_contract, takes_attr

__all__ = [
    "ATTRS_SINCE",
    "CONTRACT_VERSION",
    "METHODS_SINCE",
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
    "PendingCollective",
    "PluginError",
    "PrimitiveSpec",
    "ProgramCache",
    "Registry",
    "StagedCommunicator",
    "calls_method",
    "check_contract",
    "defines_own",
    "takes_attr",
    "hookimpl",
    "hookspec",
]
