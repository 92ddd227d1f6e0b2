"""The main job in Python: the articles' MLP (784-128-10, Adam 1e-3, batch 64) trained on
Fashion-MNIST with Keras-style fit, then saved, charted and asked for a few predictions.

    python examples/train_fashion_mnist.py [--epochs 3] [--limit N] [--out runs/example-py]
"""
import argparse
import os

import unigrad as ug


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--limit", type=int, default=None, help="use only the first N training images")
    parser.add_argument("--out", default="runs/example-py")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)

    ug.manual_seed(0)
    train_set = ug.datasets.fashion_mnist(train=True)  # images (1, 28, 28) in [0, 1], int64 labels
    test_set = ug.datasets.fashion_mnist(train=False)
    if args.limit:
        train_set = ug.data.Subset(train_set, range(args.limit))
    train = ug.data.DataLoader(train_set, batch_size=64, shuffle=True, seed=0, num_workers=2)
    test = ug.data.DataLoader(test_set, batch_size=1000)

    arch = ug.models.Architecture("mlp")  # nn.Sequential(Flatten, Linear(784, 128), ReLU, Linear(128, 10))
    model = ug.models.build(arch)
    model.compile(optimizer=ug.optim.Adam(model.parameters(), lr=1e-3),
                  loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    history = model.fit(train, epochs=args.epochs, validation_data=test, callbacks=[
        ug.callbacks.CSVLogger(f"{args.out}/metrics.csv"),
        ug.callbacks.TensorBoard(f"{args.out}/logs"),
        ug.callbacks.ModelCheckpoint(f"{args.out}/checkpoint.safetensors", save_weights_only=False),
    ])
    loss, accuracy = model.evaluate(test, verbose=0)
    print(f"test accuracy {accuracy:.4f}, test loss {loss:.4f}")

    ug.models.save_model(model, arch, f"{args.out}/model.safetensors")
    ug.logging.plot_history(history, f"{args.out}/history.svg", title="mlp on fashion-mnist")
    images, labels = test_set.get_batch(range(5))
    probabilities = model.predict(images, verbose=0).softmax(1)
    for i, (p, label) in enumerate(zip(probabilities, labels.tolist())):
        print(f"test image {i}: {test_set.classes[p.argmax().item()]:<12} p={p.max().item():.3f}  "
              f"true: {test_set.classes[label]}")


if __name__ == "__main__":
    main()
