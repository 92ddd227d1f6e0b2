"""`ug serve` over HTTP: answers that match the model run in-process, every status code, auth,
rate limits, bounded bodies and queues, metrics, concurrent clients, and a graceful SIGTERM."""
import http.client
import json
import os
import signal
import socket
import subprocess
import threading
import time

import numpy as np
import pytest

import unigrad as ug

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
UG = os.environ.get("UG_CLI", os.path.join(ROOT, "build", "cli", "ug"))


class Server:
    """`ug serve MODEL --port 0 ARGS...`; the port comes from its first line on stdout."""

    def __init__(self, model, *args, log=None):
        self.proc = subprocess.Popen([UG, "serve", model, "--port", "0", *args], stdout=subprocess.PIPE,
                                     stderr=log or subprocess.DEVNULL, text=True)
        line = self.proc.stdout.readline()
        assert "http://127.0.0.1:" in line, f"no banner, got {line!r}, exit code {self.proc.poll()}"
        self.port = int(line.split("http://127.0.0.1:")[1].split()[0])

    def request(self, method, path, body=None, headers=None, conn=None):
        """(status, headers, body bytes); a new connection unless one is given."""
        c = conn or http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        try:
            c.request(method, path, body=body, headers=headers or {})
            r = c.getresponse()
            return r.status, dict(r.getheaders()), r.read()
        finally:
            if conn is None:
                c.close()

    def predict(self, inputs, headers=None, conn=None):
        status, hdrs, body = self.request("POST", "/predict", json.dumps({"inputs": inputs}),
                                          {"Content-Type": "application/json", **(headers or {})}, conn)
        return status, hdrs, json.loads(body)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        out, _ = self.proc.communicate(timeout=20)
        return self.proc.returncode, out

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def save(tmp_path_factory, name, **config):
    arch = ug.models.Architecture(name, **config)
    model = ug.models.build(arch)
    model.eval()
    path = str(tmp_path_factory.mktemp(name) / "model.safetensors")
    ug.models.save_model(model, arch, path)
    return model, path


def forward(model, x):
    with ug.no_grad():
        return model(ug.from_numpy(np.ascontiguousarray(x, dtype=np.float32))).numpy()


@pytest.fixture(scope="module")
def mlp(tmp_path_factory):
    return save(tmp_path_factory, "mlp", hidden=32)


@pytest.fixture(scope="module")
def served(mlp):
    with Server(mlp[1], "--rate", "0") as server:
        yield server


@pytest.fixture(scope="module")
def transformer(tmp_path_factory):
    """Slow enough (tens of ms for 256 samples) to keep requests in flight."""
    return save(tmp_path_factory, "transformer")


def test_answers_match_the_model_in_process(mlp, served):
    x = np.random.default_rng(0).random((5, 784), dtype=np.float32)
    status, _, out = served.predict(x.tolist())
    assert status == 200
    want = forward(mlp[0], x)
    np.testing.assert_allclose(out["outputs"], want, rtol=1e-5, atol=1e-5)
    assert out["predictions"] == want.argmax(1).tolist()


@pytest.mark.filterwarnings("ignore:You are using the legacy TorchScript-based ONNX export")
def test_serves_an_onnx_model_exported_by_torch(tmp_path):
    import torch
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(784, 64), torch.nn.ReLU(), torch.nn.Linear(64, 10)).eval()
    path = str(tmp_path / "mlp.onnx")
    torch.onnx.export(model, (torch.randn(1, 784),), path, input_names=["x"], output_names=["y"],
                      dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}}, dynamo=False)
    x = np.random.default_rng(3).random((4, 784), dtype=np.float32)
    with torch.no_grad():
        want = model(torch.from_numpy(x)).numpy()
    with Server(path) as server:
        status, _, out = server.predict(x.tolist())
        assert status == 200
        np.testing.assert_allclose(out["outputs"], want, rtol=1e-5, atol=1e-5)
        assert out["predictions"] == want.argmax(1).tolist()
        status, _, body = server.request("GET", "/v1/model")
        info = json.loads(body)
        assert status == 200 and info["format"] == "onnx"
        assert info["inputs"][0]["name"] == "x" and info["inputs"][0]["shape"] == [-1, 784]
        assert info["outputs"][0]["name"] == "y" and info["outputs"][0]["shape"] == [-1, 10]
        status, _, out = server.predict(x[:, :100].tolist())
        assert status == 400 and "784" in out["error"]
        assert server.stop()[0] == 0


def test_nested_and_flattened_rows_give_the_same_answer(tmp_path_factory):
    model, path = save(tmp_path_factory, "lenet")
    x = np.random.default_rng(1).random((2, 1, 28, 28), dtype=np.float32)
    with Server(path) as server:
        nested = server.predict(x.tolist())
        flat = server.predict(x.reshape(2, 784).tolist())
        assert nested[0] == flat[0] == 200
        np.testing.assert_allclose(nested[2]["outputs"], forward(model, x), rtol=1e-5, atol=1e-5)
        assert nested[2] == flat[2]
        status, _, out = server.predict(x.reshape(2, 28, 28).tolist())
        assert status == 400 and out["error"] == "expected 'inputs' of shape (N, 1, 28, 28) or (N, 784), got (2, 28, 28)"


def test_raw_float32_bodies(mlp, served):
    x = np.random.default_rng(2).random((3, 784), dtype=np.float32)
    want = forward(mlp[0], x)
    status, _, body = served.request("POST", "/predict", x.tobytes(), {"Content-Type": "application/octet-stream"})
    assert status == 200
    np.testing.assert_allclose(json.loads(body)["outputs"], want, rtol=1e-5, atol=1e-5)
    status, headers, body = served.request("POST", "/predict", x.tobytes(), {
        "Content-Type": "application/octet-stream", "Accept": "application/octet-stream"})
    assert status == 200 and headers["Content-Type"] == "application/octet-stream"
    assert headers["X-Output-Shape"] == "3,10"
    np.testing.assert_allclose(np.frombuffer(body, "<f4").reshape(3, 10), want, rtol=1e-5, atol=1e-5)
    status, _, body = served.request("POST", "/predict", b"\0" * 1000, {"Content-Type": "application/octet-stream"})
    assert status == 400
    assert json.loads(body)["error"] == "expected float32 rows of 784 values (a multiple of 3136 bytes), got 1000 bytes"


@pytest.mark.parametrize("body, message", [
    ('{"inputs": [[1, 2', "malformed JSON: parse error at line 1, column 18: syntax error while parsing array - "
                          "unexpected end of input; expected ']'"),
    ("[1, 2]", 'expected a JSON object {"inputs": [[...], ...]}, got an array'),
    ('{"data": [[1]]}', "unknown key 'data'; the body is {\"inputs\": [[...], ...]}"),
    ("{}", "expected a JSON object {\"inputs\": [[...], ...]} with a key 'inputs'"),
    ('{"inputs": 3}', "expected 'inputs' to be a list of rows, got a number"),
    ('{"inputs": []}', "expected 'inputs' of shape (N, 784), got an empty list"),
    ('{"inputs": [[1, 2, 3]]}', "expected 'inputs' of shape (N, 784), got (1, 3)"),
    ('{"inputs": [1, 2, 3]}', "expected 'inputs' of shape (N, 784), got (3,)"),
    ('{"inputs": [[1, 2], [3]]}', "'inputs' is ragged: lists at depth 2 have 2 and 1 items"),
    ('{"inputs": [[1, [2]]]}', "'inputs' mixes numbers and lists at depth 2"),
    ('{"inputs": [[[1]]]}', "expected 'inputs' of shape (N, 784): got lists nested deeper than 2"),
    ('{"inputs": [[[[1]]]]}', "expected 'inputs' of shape (N, 784): got lists nested deeper than 2"),
    ('{"inputs": [["0.5"]]}', "expected float32 numbers in 'inputs', got a string"),
    ('{"inputs": [[true]]}', "expected float32 numbers in 'inputs', got a boolean"),
    ('{"inputs": [[null]]}', "expected float32 numbers in 'inputs', got null"),
    ('{"inputs": [[01]]}', "malformed JSON: parse error at line 1, column 15: syntax error while parsing array - "
                           "unexpected number literal; expected ']'"),
])
def test_bad_bodies_get_400_saying_what_was_expected(served, body, message):
    status, headers, out = served.request("POST", "/predict", body, {"Content-Type": "application/json"})
    assert status == 400 and headers["Content-Type"] == "application/json"
    assert json.loads(out) == {"error": message}


def test_unknown_paths_404_and_wrong_methods_405(served):
    status, _, body = served.request("GET", "/nope")
    assert status == 404 and "POST /predict" in json.loads(body)["error"]
    status, headers, body = served.request("GET", "/predict")
    assert status == 405 and headers["Allow"] == "POST"
    assert json.loads(body)["error"] == "GET is not allowed on /predict; use POST"
    status, headers, _ = served.request("POST", "/healthz", "{}")
    assert status == 405 and headers["Allow"] == "GET"


def test_bodies_over_the_limit_get_413(mlp):
    with Server(mlp[1], "--max-body", "4096") as server:
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
        status, _, body = server.request("POST", "/predict", json.dumps({"inputs": [[0.25] * 784]}),
                                         {"Content-Type": "application/json"}, conn)
        assert status == 413 and json.loads(body)["error"] == "the body is larger than 4096 bytes"
        assert server.predict([[1] * 784], conn=conn)[0] == 200  # 2,367 bytes
        conn.close()


def test_a_request_dribbled_a_byte_at_a_time_is_cut_off(mlp):
    body = json.dumps({"inputs": [[0.5] * 784]}).encode()
    request = (b"POST /predict HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
               b"Content-Length: %d\r\n\r\n" % len(body)) + body
    with Server(mlp[1], "--timeout-ms", "600") as server:
        with socket.create_connection(("127.0.0.1", server.port), timeout=5) as slow:
            start, answer = time.monotonic(), b"?"
            for i in range(len(request)):  # a byte every 50 ms: 7 minutes for the whole request
                if time.monotonic() - start > 3:
                    break
                try:
                    slow.sendall(request[i:i + 1])
                    slow.settimeout(0.05)
                    answer = slow.recv(4096)
                    break  # the server closed the connection (b"") or answered
                except socket.timeout:
                    continue
                except (BrokenPipeError, ConnectionResetError):
                    answer = b""
                    break
            assert answer == b"" and time.monotonic() - start < 2, answer
        assert server.predict([[0.5] * 784])[0] == 200  # others are still served


def test_bearer_token_auth(mlp, tmp_path):
    token_file = tmp_path / "token"
    token_file.write_text("s3cret-token\n")
    with Server(mlp[1], "--token-file", str(token_file)) as server:
        status, headers, body = server.request("GET", "/v1/model")
        assert status == 401 and headers["WWW-Authenticate"].startswith("Bearer")
        assert json.loads(body)["error"] == "missing Authorization: Bearer <token>"
        for wrong in ("Bearer s3cret-tokeN", "Bearer s3cret", "Bearer s3cret-tokenx", "s3cret-token"):
            status, _, body = server.request("GET", "/v1/model", headers={"Authorization": wrong})
            assert status == 401 and json.loads(body)["error"] == "wrong bearer token"
        ok = {"Authorization": "Bearer s3cret-token"}
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
        # The refused body is read: the keep-alive connection goes on with the next request.
        assert server.predict([[0.5] * 784], conn=conn)[0] == 401
        assert server.predict([[0.5] * 784], headers=ok, conn=conn)[0] == 200
        assert server.request("GET", "/v1/model", headers=ok, conn=conn)[0] == 200
        conn.close()
        assert server.request("GET", "/healthz")[0] == 200  # for load balancers, without the token
    token_file.write_text("\n")
    r = subprocess.run([UG, "serve", mlp[1], "--port", "0", "--token-file", str(token_file)],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 1 and f"the token file {token_file} is empty" in r.stderr


def test_rate_limit_answers_429_with_retry_after(mlp):
    with Server(mlp[1], "--rate", "0.5", "--burst", "3") as server:
        assert [server.request("GET", "/healthz")[0] for _ in range(3)] == [200] * 3
        status, headers, body = server.request("GET", "/healthz")
        assert status == 429 and int(headers["Retry-After"]) in (1, 2)
        assert json.loads(body)["error"] == "rate limit exceeded: at most 0.5 requests per second per client"
        assert server.predict([[0.5] * 784])[0] == 429


def test_refuses_to_bind_beyond_loopback_without_a_token(mlp):
    for host in ("0.0.0.0", "::", "192.168.1.10"):
        r = subprocess.run([UG, "serve", mlp[1], "--host", host], capture_output=True, text=True, timeout=30)
        assert r.returncode == 2
        assert f"refusing to serve on {host} without authentication: give --token-file" in r.stderr


def test_port_in_use_is_one_clear_error(mlp):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        r = subprocess.run([UG, "serve", mlp[1], "--port", str(port)], capture_output=True, text=True, timeout=30)
    assert r.returncode == 1
    assert r.stderr == f"ug serve: error: cannot listen on 127.0.0.1:{port}: Address already in use\n"


def test_metrics_and_model_description(mlp):
    with Server(mlp[1]) as server:
        assert server.predict([[0.5] * 784] * 3)[0] == 200
        assert server.request("GET", "/nope")[0] == 404
        # A request is counted once its answer is written: the count can trail the client.
        for _ in range(100):
            status, headers, body = server.request("GET", "/metrics")
            if 'ug_requests_total{code="404"} 1' in body.decode():
                break
            time.sleep(0.01)
        assert status == 200 and headers["Content-Type"].startswith("text/plain")
        text = body.decode()
        assert "# TYPE ug_request_duration_seconds histogram" in text and "# TYPE ug_queue_depth gauge" in text
        values = {k: float(v) for k, v in (line.rsplit(" ", 1) for line in text.splitlines() if line[0] != "#")}
        assert values['ug_requests_total{code="404"}'] == 1 and values['ug_requests_total{code="200"}'] >= 1
        assert values['ug_request_duration_seconds_bucket{le="+Inf"}'] == values["ug_request_duration_seconds_count"] >= 2
        assert values['ug_request_duration_seconds_bucket{le="0.0001"}'] <= values['ug_request_duration_seconds_bucket{le="1"}']
        assert values['ug_batch_size_bucket{le="2"}'] == 0 and values['ug_batch_size_bucket{le="4"}'] == 1
        assert values["ug_batch_size_sum"] == 3 and values["ug_batch_size_count"] == 1
        assert values["ug_queue_depth"] == 0 and values["ug_predictions_in_progress"] == 0
        status, _, body = server.request("GET", "/v1/model")
        assert json.loads(body) == {
            "format": "unigrad", "architecture": "mlp", "max_batch": 64,
            "settings": {"classes": 10, "hidden": 32, "in_features": 784},
            "inputs": [{"name": "input", "shape": [-1, 784], "dtype": "float32"}],
            "outputs": [{"name": "output", "shape": [-1, 10], "dtype": "float32"}]}


def test_concurrent_clients_each_get_their_own_answer(mlp, tmp_path):
    clients, per_client = 16, 50
    x = np.random.default_rng(3).random((clients, per_client, 784), dtype=np.float32)
    want = forward(mlp[0], x.reshape(-1, 784)).reshape(clients, per_client, 10)
    got = np.zeros_like(want)
    failures = []

    with open(tmp_path / "access.log", "w") as log, Server(mlp[1], "--rate", "0", log=log) as server:
        def run(i):
            conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
            for j in range(per_client):
                status, _, out = server.predict([x[i, j].tolist()], conn=conn)
                if status != 200:
                    failures.append(status)
                    return
                got[i, j] = out["outputs"][0]
            conn.close()

        threads = [threading.Thread(target=run, args=(i,)) for i in range(clients)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert server.stop()[0] == 0
    assert not failures
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    lines = (tmp_path / "access.log").read_text().splitlines()
    assert len(lines) == clients * per_client
    client_addr, method, path, status, size, latency, batch = lines[0].split()
    assert (client_addr, method, path, status) == ("127.0.0.1", "POST", "/predict", "200")
    assert int(size) > 0 and latency.endswith("us") and batch.startswith("batch=")


def big_request(server, x, results, connected=None):
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    conn.connect()
    if connected:
        connected.wait()
    status, _, body = server.request("POST", "/predict", x.tobytes(), {
        "Content-Type": "application/octet-stream", "Accept": "application/octet-stream"}, conn)
    conn.close()
    results.append((status, body, time.monotonic()))


def gauge(server, name):
    text = server.request("GET", "/metrics")[2].decode()
    return int(next(line for line in text.splitlines() if line.startswith(name + " ")).split()[1])


def test_a_full_queue_answers_503(transformer):
    x = np.random.default_rng(4).random((256, 28, 28), dtype=np.float32)
    results = []
    with Server(transformer[1], "--max-queue", "1", "--rate", "0") as server:
        threads = [threading.Thread(target=big_request, args=(server, x, results)) for _ in range(12)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        statuses = [r[0] for r in results]
        assert 200 in statuses and 503 in statuses and set(statuses) == {200, 503}, statuses
        refused = json.loads(next(r[1] for r in results if r[0] == 503))
        assert refused == {"error": "the queue is full (1 requests); retry later"}
        assert server.stop()[0] == 0


def test_sigterm_finishes_the_requests_in_flight_and_exits_0(transformer):
    x = np.random.default_rng(5).random((256, 28, 28), dtype=np.float32)
    want = forward(transformer[0], x)
    results = []
    with Server(transformer[1], "--rate", "0", "--max-batch", "256") as server:
        connected = threading.Barrier(7)
        threads = [threading.Thread(target=big_request, args=(server, x, results, connected)) for _ in range(6)]
        for t in threads:
            t.start()
        connected.wait()
        # The signal comes once the server has read all six: a connection whose request it has
        # not begun to read when it stops is closed unanswered. Forwards take tens of ms, one
        # at a time, so most are still waiting then.
        deadline = time.monotonic() + 10
        while gauge(server, "ug_predictions_in_progress") + len(results) < 6 and time.monotonic() < deadline:
            time.sleep(0.002)
        signalled = time.monotonic()
        server.proc.send_signal(signal.SIGTERM)
        for t in threads:
            t.join()
        code, out = server.stop()
    assert code == 0 and out.endswith("ug serve: stopped\n")
    assert [r[0] for r in results] == [200] * 6
    assert any(r[2] > signalled for r in results)  # some were still running when the signal came
    for _, body, _ in results:
        np.testing.assert_allclose(np.frombuffer(body, "<f4").reshape(256, 10), want, rtol=1e-5, atol=1e-5)
