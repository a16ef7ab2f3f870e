"""The TPU v6e catalog: every shape's chips, VMs and machine type, and clear errors."""

import pytest

from tpu_platform import catalog


@pytest.mark.parametrize(
    ("topology", "multi_host", "chips", "vms", "machine"),
    [
        ("1x1", None, 1, 1, "ct6e-standard-1t"),
        ("2x2", None, 4, 1, "ct6e-standard-4t"),
        ("2x4", None, 8, 1, "ct6e-standard-8t"),
        ("2x4", False, 8, 1, "ct6e-standard-8t"),
        ("2x4", True, 8, 2, "ct6e-standard-4t"),
        ("4x4", None, 16, 4, "ct6e-standard-4t"),
        ("4x8", None, 32, 8, "ct6e-standard-4t"),
        ("8x8", None, 64, 16, "ct6e-standard-4t"),
        ("8x16", None, 128, 32, "ct6e-standard-4t"),
        ("16x16", None, 256, 64, "ct6e-standard-4t"),
    ],
)
def test_shapes(topology: str, multi_host: bool | None, chips: int, vms: int, machine: str) -> None:
    shape = catalog.lookup(topology, multi_host)
    assert (shape.chips, shape.vms, shape.machine_type) == (chips, vms, machine)
    assert shape.multi_host == (vms > 1)
    assert shape.chips_per_vm * shape.vms == chips


def test_chips_per_vm_matches_machine_type() -> None:
    for shape in catalog.all_shapes():
        suffix = int(shape.machine_type.rsplit("-", 1)[1].removesuffix("t"))
        assert shape.chips_per_vm == suffix, shape


def test_unknown_topology_lists_valid_shapes() -> None:
    with pytest.raises(catalog.UnsupportedSliceError) as err:
        catalog.lookup("4x2")
    message = str(err.value)
    assert "'4x2'" in message
    for topology in catalog.valid_topologies():
        assert topology in message


def test_single_host_shape_has_no_multi_host_form() -> None:
    with pytest.raises(catalog.UnsupportedSliceError, match="no multi-host form"):
        catalog.lookup("2x2", multi_host=True)
    with pytest.raises(catalog.UnsupportedSliceError, match="no single-host form"):
        catalog.lookup("4x4", multi_host=False)


def test_keys_are_unique_and_largest_slice_is_256() -> None:
    keys = [s.key for s in catalog.all_shapes()]
    assert len(keys) == len(set(keys))
    assert catalog.MAX_SLICE_CHIPS == 256


def test_node_labels() -> None:
    assert catalog.node_labels(catalog.lookup("8x8")) == {
        "cloud.google.com/gke-tpu-accelerator": "tpu-v6e-slice",
        "cloud.google.com/gke-tpu-topology": "8x8",
    }
