"""ug.onnx.load against the official ONNX backend node tests of the installed onnx package (see
onnx_node_suite.py): no wrong answer, no crash, and at least PASS_FLOOR cases passed."""
import collections

import onnx

from onnx_node_suite import run_suite, summary

# Measured with onnx 1.23.2 (1,884 cases); onnxruntime 1.31.1 passes 1,376 of them under the same
# tolerances. When a change passes more, raise the floor to the new count that
#   python tests/python/onnx_node_suite.py --runtime ug
# prints, so that a later regression fails here.
PASS_FLOOR = 1609
ONNX_VERSION = "1.23.2"


def test_node_suite_has_no_wrong_answers_or_crashes_and_keeps_its_pass_count():
    results = run_suite("ug")
    report = summary("ug", results)
    bad = {name: r for name, r in results.items() if r["status"] in ("wrong", "crash")}
    assert not bad, "wrong answers or crashes:\n" + report
    passed = collections.Counter(r["status"] for r in results.values())["pass"]
    if onnx.__version__ == ONNX_VERSION:  # another onnx has other cases, and the floor is not its count
        assert passed >= PASS_FLOOR, f"{passed} node tests pass, fewer than the floor of {PASS_FLOOR}:\n" + report
