"""ug.datasets.FashionMNIST against a NumPy decoding of Debian's files (dataset-fashion-mnist,
installed by scripts/setup.sh): samples, batches, transforms, and the errors for missing files."""
import gzip
import os

import numpy as np
import pytest
import torch

import unigrad as ug
from unigrad.data import transforms as T

FASHION = "/usr/share/datasets/fashion-mnist"


def numpy_split(prefix):
    with gzip.open(os.path.join(FASHION, f"{prefix}-images-idx3-ubyte.gz")) as f:
        images = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 28, 28)
    with gzip.open(os.path.join(FASHION, f"{prefix}-labels-idx1-ubyte.gz")) as f:
        labels = np.frombuffer(f.read(), np.uint8, offset=8)
    return images, labels


@pytest.fixture(scope="module")
def test_split():
    return numpy_split("t10k")


def test_data_and_targets_match_numpy(test_split):
    images, labels = test_split
    ds = ug.datasets.FashionMNIST(train=False)
    assert len(ds) == 10000 and not ds.train and ds.root == FASHION
    assert ds.data.dtype == ug.uint8 and ds.data.shape == (10000, 28, 28)
    assert ds.targets.dtype == ug.int64
    np.testing.assert_array_equal(ds.data.numpy(), images)
    np.testing.assert_array_equal(ds.targets.numpy(), labels)


def test_samples_and_batches(test_split):
    images, labels = test_split
    ds = ug.datasets.fashion_mnist(train=False)
    image, label = ds[7]
    assert image.dtype == ug.float32 and image.shape == (1, 28, 28)
    np.testing.assert_array_equal(image.numpy()[0], images[7].astype(np.float32) / np.float32(255))
    assert label.dtype == ug.int64 and label.item() == labels[7]
    assert ds[-1][1].item() == labels[-1]
    idx = [5, 0, 9999, 5, -2]
    x, y = ds.get_batch(idx)
    assert x.shape == (5, 1, 28, 28) and y.shape == (5,)
    expected = torch.from_numpy(images[idx].copy()).unsqueeze(1).float().div(255)
    np.testing.assert_array_equal(x.numpy(), expected.numpy())
    np.testing.assert_array_equal(y.numpy(), labels[idx])
    np.testing.assert_array_equal(ds.get_batch(ug.tensor(idx))[1].numpy(), labels[idx])
    with pytest.raises(IndexError, match="index 10000 is out of range for 10000 samples"):
        ds[10000]
    with pytest.raises(IndexError):
        ds.get_batch([1, -10001])
    with pytest.raises(ValueError, match="at least one index"):
        ds.get_batch([])


def test_transforms_run_on_samples_and_batches(test_split):
    images, labels = test_split
    ds = ug.datasets.FashionMNIST(train=False, transform=T.Normalize((0.2860,), (0.3530,)),
                                  target_transform=lambda y: y + 100)
    x, y = ds.get_batch(list(range(64)))
    t = torch.from_numpy(images[:64].copy()).unsqueeze(1).float().div(255)
    expected = t.sub(torch.tensor(0.2860)).div(torch.tensor(0.3530))
    np.testing.assert_array_equal(x.numpy(), expected.numpy())
    np.testing.assert_array_equal(y.numpy(), labels[:64] + 100)
    image, label = ds[3]
    np.testing.assert_array_equal(image.numpy(), expected[3].numpy())
    assert label.item() == labels[3] + 100
    assert isinstance(ds.transform, T.Normalize) and callable(ds.target_transform)
    assert "Transform: Normalize" in repr(ds)


def test_random_transforms_repeat_under_a_seed():
    ds = ug.datasets.FashionMNIST(train=False, transform=T.Compose([T.RandomCrop(28, padding=4),
                                                                    T.RandomHorizontalFlip()]))
    idx = list(range(32))
    ug.manual_seed(5)
    a, _ = ds.get_batch(idx)
    ug.manual_seed(5)
    b, _ = ds.get_batch(idx)
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    plain, _ = ug.datasets.FashionMNIST(train=False).get_batch(idx)
    assert not np.array_equal(a.numpy(), plain.numpy())


def test_training_split_and_classes():
    images, labels = numpy_split("train")
    ds = ug.datasets.FashionMNIST()
    assert len(ds) == 60000 and ds.train
    np.testing.assert_array_equal(ds.targets.numpy(), labels)
    np.testing.assert_array_equal(ds.data.numpy()[::997], images[::997])
    assert ds.classes[0] == "T-shirt/top" and ds.classes[9] == "Ankle boot" and len(ds.classes) == 10
    assert ug.datasets.FashionMNIST.class_to_idx["Sneaker"] == 7


def idx_file(array, code=0x08):
    header = bytes([0, 0, code, array.ndim]) + b"".join(int(n).to_bytes(4, "big") for n in array.shape)
    return header + array.tobytes()


def test_missing_files_name_the_file_and_the_package(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"missing .*train-images-idx3-ubyte.gz.*"
                                                r"sudo apt-get install dataset-fashion-mnist"):
        ug.datasets.FashionMNIST(root=str(tmp_path))
    # Images present, labels absent: the labels file is named.
    (tmp_path / "t10k-images-idx3-ubyte").write_bytes(idx_file(np.zeros((2, 28, 28), np.uint8)))
    with pytest.raises(FileNotFoundError, match="t10k-labels-idx1-ubyte.gz"):
        ug.datasets.FashionMNIST(root=tmp_path, train=False)


def test_environment_variable_and_uncompressed_files(tmp_path, monkeypatch):
    rng = np.random.default_rng(0)
    images = rng.integers(0, 256, (3, 28, 28), dtype=np.uint8)
    labels = np.array([4, 0, 9], np.uint8)
    (tmp_path / "train-images-idx3-ubyte").write_bytes(idx_file(images))
    (tmp_path / "train-labels-idx1-ubyte").write_bytes(idx_file(labels))
    monkeypatch.setenv("FASHION_MNIST_DIR", str(tmp_path))
    ds = ug.datasets.FashionMNIST()
    assert ds.root == str(tmp_path) and len(ds) == 3
    np.testing.assert_array_equal(ds.data.numpy(), images)
    assert ds.targets.tolist() == [4, 0, 9]
    # Malformed contents are errors too.
    (tmp_path / "train-labels-idx1-ubyte").write_bytes(idx_file(np.array([4, 0, 10], np.uint8)))
    with pytest.raises(ValueError, match="label above 9"):
        ug.datasets.FashionMNIST()
    (tmp_path / "train-labels-idx1-ubyte").write_bytes(idx_file(labels[:2]))
    with pytest.raises(ValueError, match="not 3 uint8 labels"):
        ug.datasets.FashionMNIST()
    (tmp_path / "train-images-idx3-ubyte").write_bytes(idx_file(np.zeros((3, 28, 27), np.uint8)))
    with pytest.raises(ValueError, match=r"not uint8 images of shape \(N, 28, 28\)"):
        ug.datasets.FashionMNIST()
