"""ug.logging.plot_history and write_chart_svg: standalone SVG line charts of training metrics,
parsed back with xml.etree."""
import math
import xml.etree.ElementTree as ET

import pytest

import unigrad as ug

SVG = "{http://www.w3.org/2000/svg}"


def parse(path):
    root = ET.parse(path).getroot()
    assert root.tag == SVG + "svg"
    return root


def series_groups(root):
    return {g.get("data-series"): g for g in root.iter(SVG + "g") if g.get("class") == "series"}


def polylines(group):
    lines = group.iter(SVG + "polyline")
    return [[tuple(map(float, p.split(","))) for p in line.get("points").split()] for line in lines]


def circles(group):
    return [(float(c.get("cx")), float(c.get("cy"))) for c in group.iter(SVG + "circle")]


def panel_titles(root):
    return [t.text for t in root.iter(SVG + "text") if t.get("class") == "panel-title"]


def assert_maps_monotonically(points, values):
    """x grows with the epoch; y (downwards in SVG) falls as the value rises."""
    xs = [p[0] for p in points]
    assert xs == sorted(xs) and len(set(xs)) == len(xs)
    for (_, ya), (_, yb), va, vb in zip(points, points[1:], values, values[1:]):
        assert (ya > yb) == (vb > va) and (ya == yb) == (va == vb)


HISTORY = {
    "loss": [2.3, 1.1, 0.7, 0.52, 0.41, 0.37],
    "accuracy": [0.3, 0.6, 0.75, 0.82, 0.86, 0.88],
    "val_loss": [2.0, 1.2, 0.8, 0.6, 0.5, 0.55],
    "val_accuracy": [0.35, 0.58, 0.7, 0.78, 0.8, 0.79],
}


def test_history_gets_a_panel_per_metric_with_its_validation_series(tmp_path):
    path = tmp_path / "history.svg"
    ug.logging.plot_history(HISTORY, path)
    root = parse(path)
    assert panel_titles(root) == ["loss", "accuracy"]
    groups = series_groups(root)
    assert list(groups) == ["loss", "val_loss", "accuracy", "val_accuracy"]
    for name, values in HISTORY.items():
        (line,) = polylines(groups[name])
        assert len(line) == len(values)
        assert_maps_monotonically(line, values)
    legend = [t.text for g in root.iter(SVG + "g") if g.get("class") == "legend" for t in g.iter(SVG + "text")]
    assert legend == ["loss", "val_loss", "accuracy", "val_accuracy"]


def test_points_share_one_scale_within_a_panel(tmp_path):
    path = tmp_path / "h.svg"
    ug.logging.plot_history({"loss": [1.0, 2.0], "val_loss": [2.0, 1.0]}, path)
    groups = series_groups(parse(path))
    (train,), (val,) = polylines(groups["loss"]), polylines(groups["val_loss"])
    assert train[0] == (val[0][0], val[1][1]) and train[1] == (val[1][0], val[0][1])


def test_nan_and_none_leave_gaps(tmp_path):
    path = tmp_path / "gaps.svg"
    ug.logging.plot_history({"loss": [1.0, 2.0, float("nan"), 3.0, 4.0, 5.0], "val_loss": [1.0, None, 2.0]}, path)
    groups = series_groups(parse(path))
    lines = polylines(groups["loss"])
    assert [len(line) for line in lines] == [2, 3]
    assert lines[0][-1][0] < lines[1][0][0]
    assert_maps_monotonically(lines[0] + lines[1], [1.0, 2.0, 3.0, 4.0, 5.0])
    assert polylines(groups["val_loss"]) == [] and len(circles(groups["val_loss"])) == 2


def test_single_point_and_constant_series_stay_inside_the_plot(tmp_path):
    path = tmp_path / "edge.svg"
    ug.logging.plot_history({"loss": [0.5], "acc": [0.9, 0.9, 0.9], "lr": [float("nan")] * 2}, path)
    root = parse(path)
    width, height = float(root.get("width")), float(root.get("height"))
    groups = series_groups(root)
    (point,) = circles(groups["loss"])
    (line,) = polylines(groups["acc"])
    assert len({y for _, y in line}) == 1
    for x, y in [point] + line:
        assert 0 < x < width and 0 < y < height
    assert polylines(groups["lr"]) == [] and circles(groups["lr"]) == []


def y_tick_values(root):
    """The y axis's tick labels: the only right-aligned text."""
    return [float(t.text) for t in root.iter(SVG + "text") if t.get("text-anchor") == "end"]


@pytest.mark.parametrize("values", [[0.3, 0.93], [2.3, 0.28], [1e-3, 1e-5], [1234.0, 5678.0], [3.0, 3.0], [-0.4, 0.7]])
def test_y_ticks_are_round_and_evenly_spaced(tmp_path, values):
    path = tmp_path / "ticks.svg"
    ug.logging.plot_history({"m": values}, path)
    ticks = y_tick_values(parse(path))
    assert 3 <= len(ticks) <= 12
    assert ticks[0] <= min(values) and ticks[-1] >= max(values)
    steps = [b - a for a, b in zip(ticks, ticks[1:])]
    step = steps[0]
    assert all(s == pytest.approx(step, rel=1e-6) for s in steps)
    mantissa = step / 10 ** math.floor(math.log10(step))
    assert any(mantissa == pytest.approx(m) for m in (1, 2, 5))


def test_text_is_escaped_and_the_document_is_valid_xml(tmp_path):
    path = tmp_path / "esc.svg"
    title = 'a < b & "c" \'d\' > e'
    ug.logging.plot_history({"l<o>ss": [1.0, 2.0], "val_l<o>ss": [2.0, 1.0]}, path, title=title)
    root = parse(path)
    assert [t.text for t in root.iter(SVG + "text") if t.get("class") == "title"] == [title]
    assert list(series_groups(root)) == ["l<o>ss", "val_l<o>ss"]


def test_validation_metric_without_training_metric_gets_its_own_panel(tmp_path):
    path = tmp_path / "val.svg"
    ug.logging.plot_history({"val_auc": [0.7, 0.8], "loss": [1.0, 0.5]}, path)
    assert panel_titles(parse(path)) == ["val_auc", "loss"]


def test_history_objects_and_tensor_values_are_accepted(tmp_path):
    class History:
        history = {"loss": [ug.tensor(1.0), ug.tensor(0.5)]}

    path = tmp_path / "obj.svg"
    ug.logging.plot_history(History(), path)
    (line,) = polylines(series_groups(parse(path))["loss"])
    assert len(line) == 2


def test_chart_spec_draws_custom_panels(tmp_path):
    spec = ug.logging.ChartSpec(
        [ug.logging.Panel("loss", [ug.logging.Series("a", [3.0, 2.0, 1.0])], y_label="cross-entropy"),
         ug.logging.Panel("lr", [ug.logging.Series("lr", [0.1, 0.01])])],
        title="run", panel_width=300, panel_height=200)
    path = tmp_path / "spec.svg"
    ug.logging.write_chart_svg(path, spec)
    root = parse(path)
    assert float(root.get("width")) == 600 and float(root.get("height")) > 200
    assert panel_titles(root) == ["loss", "lr"]
    assert ug.logging.chart_svg(spec) == path.read_text()
    assert [p.title for p in ug.logging.history_chart(HISTORY).panels] == ["loss", "accuracy"]


def test_bad_input_raises_clear_errors(tmp_path):
    with pytest.raises(ValueError, match="no metric"):
        ug.logging.plot_history({}, tmp_path / "x.svg")
    with pytest.raises(TypeError, match="not a number"):
        ug.logging.plot_history({"loss": ["high"]}, tmp_path / "x.svg")
    with pytest.raises(TypeError, match="sequence"):
        ug.logging.plot_history({"loss": 1.0}, tmp_path / "x.svg")
    with pytest.raises(TypeError, match="dict"):
        ug.logging.plot_history([1.0, 2.0], tmp_path / "x.svg")
    with pytest.raises(ValueError, match="no panels"):
        ug.logging.write_chart_svg(tmp_path / "x.svg", ug.logging.ChartSpec([]))
    with pytest.raises(RuntimeError, match="cannot create"):
        ug.logging.plot_history({"loss": [1.0]}, tmp_path / "missing" / "x.svg")
