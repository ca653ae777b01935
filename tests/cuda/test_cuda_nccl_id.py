"""The NCCL unique id travels as 128 bytes and reaches NcclCommunicator in the form the
installed cupy takes: bytes from cupy 14 on, a tuple of signed C chars before (no GPU needed)."""

from __future__ import annotations

import pytest

from adapter_api import CommunicationError
from plugins.cuda.communicator import NCCL_UNIQUE_ID_BYTES, comm_id, unique_id_bytes

UID = bytes(range(256))[:NCCL_UNIQUE_ID_BYTES][::-1]  # values on both sides of 127


@pytest.mark.parametrize("version", ["14.2.0", "14.0.0rc1", "15.0.0"])
def test_cupy_14_takes_bytes(version):
    got = comm_id(UID, version)
    assert isinstance(got, bytes) and got == UID


@pytest.mark.parametrize("version", ["13.6.0", "12.3.0"])
def test_older_cupy_takes_signed_chars(version):
    got = comm_id(UID, version)
    assert isinstance(got, tuple) and len(got) == NCCL_UNIQUE_ID_BYTES
    assert all(-128 <= v <= 127 for v in got)
    assert bytes(v & 0xFF for v in got) == UID  # the same C chars


def test_unique_id_from_either_cupy_is_the_same_bytes():
    old_style = tuple(b - 256 if b > 127 else b for b in UID)
    assert unique_id_bytes(old_style) == UID
    assert unique_id_bytes(UID) == UID
    assert comm_id(unique_id_bytes(old_style), "14.2.0") == UID


@pytest.mark.parametrize("bad", [UID[:100], (1, 2, 3), "x" * NCCL_UNIQUE_ID_BYTES])
def test_wrong_id_is_a_clear_error(bad):
    with pytest.raises(
        CommunicationError, match=rf"^\[cuda\] NCCL unique id must be {NCCL_UNIQUE_ID_BYTES} bytes, got"
    ):
        comm_id(bad, "14.2.0")
