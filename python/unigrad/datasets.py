"""ug.datasets: ready-made data sets with torchvision.datasets' names (ug::data in C++).

FashionMNIST(root=None, train=True, transform=None, target_transform=None) reads the files of
Debian's dataset-fashion-mnist package (or $FASHION_MNIST_DIR, or root); fashion_mnist(train)
is the same without transforms."""
from . import _C
from ._export import export

__all__ = export(_C.datasets, globals())
