"""How the report writes a figure: one drawing for the PNG, lean PDF fonts, labels said once."""

from __future__ import annotations

import io
import warnings
import zlib

import numpy as np
import pytest

pytest.importorskip("matplotlib")

import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.figure  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
from PIL import Image  # noqa: E402

from evalstats.plots import paper_style  # noqa: E402
from evalstats.report._layout import panels, shared_axis_labels  # noqa: E402
from evalstats.report._write import _lean_pdf_fonts, _png_and_box  # noqa: E402


def _grid(n=5, legend_outside=False):
    fig, axes = panels(n)
    rng = np.random.default_rng(0)
    for i, ax in enumerate(axes):
        ax.plot(np.cumsum(rng.normal(size=40)), label=f"model {i}")
        ax.set_title(f"dataset {i}")
        ax.set_xlabel("Number of variants n")
        ax.set_ylabel("|Δ(n)|")
    if legend_outside:  # beyond the canvas: the box reaches past the figure's edge
        axes[0].legend(loc="upper left", bbox_to_anchor=(-0.9, 1.5))
    return fig, axes


@pytest.mark.parametrize("outside", [False, True])
def test_one_drawing_gives_the_png_savefig_gives(outside):
    """The PNG cut from the layout drawing equals ``savefig(bbox_inches=tight box)``: same size
    (within a pixel of rounding), the same picture (mean difference a small fraction of the
    ink), also when the tight box reaches beyond the canvas."""
    with paper_style():
        fig, _ = _grid(legend_outside=outside)
        png, bbox = _png_and_box(fig, plt)
        ref = io.BytesIO()
        fig.savefig(ref, format="png", bbox_inches=bbox)
        plt.close(fig)
    ours = np.asarray(Image.open(io.BytesIO(png)).convert("L"), dtype=float)
    theirs = np.asarray(Image.open(ref).convert("L"), dtype=float)
    assert abs(ours.shape[0] - theirs.shape[0]) <= 1 and abs(ours.shape[1] - theirs.shape[1]) <= 1
    # the same picture up to where a line falls within a pixel: at the best alignment (the
    # cut is rounded to whole pixels, savefig shifts by a fraction) under 0.3 % of the pixels
    # differ by more than half their range, against 2 % of the pixels that carry ink
    h, w = min(ours.shape[0], theirs.shape[0]) - 2, min(ours.shape[1], theirs.shape[1]) - 2

    def off(dy, dx):
        return np.abs(ours[1 + dy : 1 + dy + h, 1 + dx : 1 + dx + w] - theirs[1 : 1 + h, 1 : 1 + w])

    d = min((off(dy, dx) for dy in (-1, 0, 1) for dx in (-1, 0, 1)), key=np.mean)
    assert (d > 128).mean() < 0.003, (d > 128).mean()
    assert ((255 - theirs) > 64).mean() > 0.01  # there is a picture to compare
    if outside:  # the part beyond the canvas is drawn (the legend there), not left blank
        assert bbox.x0 < 0
        left = int(-bbox.x0 * 300) - 2
        assert ((255 - ours[:, :left]) > 64).mean() > 2e-4, "nothing drawn left of the canvas"
    info = Image.open(io.BytesIO(png)).info
    assert info.get("Software") == "evalstats" and round(info["dpi"][0]) == 300


def _pdf(lean: bool) -> bytes:
    with paper_style():
        fig, _ = _grid(3)
        fig.canvas.draw()
        buf = io.BytesIO()
        if lean:
            with _lean_pdf_fonts():
                fig.savefig(buf, format="pdf", metadata={"CreationDate": None})
        else:
            fig.savefig(buf, format="pdf", metadata={"CreationDate": None})
        plt.close(fig)
    return buf.getvalue()


def _embedded_fonts(pdf: bytes) -> list[bytes]:
    """The decompressed FontFile2 streams of a matplotlib PDF."""
    out = []
    for part in pdf.split(b"stream\n")[1:]:
        body = part.split(b"\nendstream")[0]
        try:
            data = zlib.decompress(body)
        except zlib.error:
            continue
        if data[:4] in (b"\x00\x01\x00\x00", b"true"):  # a TrueType font
            out.append(data)
    return out


def test_lean_pdf_fonts_drop_layout_tables_only_inside_the_block():
    from fontTools.ttLib import TTFont

    lean, full = _pdf(True), _pdf(False)
    fonts_lean = [TTFont(io.BytesIO(f)) for f in _embedded_fonts(lean)]
    fonts_full = [TTFont(io.BytesIO(f)) for f in _embedded_fonts(full)]
    assert fonts_lean and len(fonts_lean) == len(fonts_full)
    for a, b in zip(fonts_lean, fonts_full):
        assert not {"GSUB", "GPOS", "GDEF", "kern"} & set(a.keys())
        # the same glyphs, less the ligatures the substitution table pulled in
        extra = set(b.getGlyphOrder()) - set(a.getGlyphOrder())
        assert set(a.getGlyphOrder()) <= set(b.getGlyphOrder())
        assert extra <= {"fi", "fl", "uniFB00", "uniFB01", "uniFB02", "uniFB03", "uniFB04"}
    from fontTools import subset
    from matplotlib.backends import _backend_pdf_ps

    assert _backend_pdf_ps.subset is subset  # restored after the block
    assert b"/ToUnicode" in lean  # copied text still reads as text


def test_repeated_panel_labels_are_said_once_per_column_and_row():
    with paper_style():
        fig, axes = _grid(5)  # 3 rows x 2 columns, the last slot empty
        shared_axis_labels(fig, axes)
        xl = [ax.get_xlabel() for ax in axes]
        yl = [ax.get_ylabel() for ax in axes]
        plt.close(fig)
    # the lowest panel of each column keeps the x label: panel 4 (left) and panel 3 (right,
    # above the empty slot); the left column keeps the y label
    assert [bool(x) for x in xl] == [False, False, False, True, True]
    assert [bool(y) for y in yl] == [True, False, True, False, True]
    with paper_style():
        fig, axes = _grid(4)
        axes[1].set_ylabel("other")  # labels that differ stay
        shared_axis_labels(fig, axes)
        assert [ax.get_ylabel() for ax in axes][1] == "other"
        assert all(ax.get_ylabel() for ax in axes)
        plt.close(fig)


def test_the_same_row_names_are_said_once_per_row_of_panels():
    """Forests and boxes of the same models in the same order: the names stand left of the
    first column only. Rows that differ (a model missing from one panel) and numeric axes
    keep their labels in every panel."""

    def shown(axes):
        return [[t.get_text() for t in ax.get_yticklabels()] for ax in axes]

    with paper_style():
        fig, axes = panels(3)
        for ax in axes:
            ax.set_yticks(range(3), ["m0", "m1", "m2"])
            ax.set_ylim(2.5, -0.5)
        shared_axis_labels(fig, axes)
        assert shown(axes) == [["m0", "m1", "m2"], [], ["m0", "m1", "m2"]]
        plt.close(fig)
        fig, axes = panels(2)
        axes[0].set_yticks(range(3), ["m0", "m1", "m2"])
        axes[1].set_yticks(range(2), ["m0", "m2"])  # m1 missing: its rows are not the same
        shared_axis_labels(fig, axes)
        assert shown(axes) == [["m0", "m1", "m2"], ["m0", "m2"]]
        plt.close(fig)
        fig, axes = panels(2)
        for ax in axes:
            ax.plot([0, 1], [0, 1])  # numbers, made at drawing, each panel its own
        shared_axis_labels(fig, axes)
        fig.canvas.draw()
        assert all(labels for labels in shown(axes))
        plt.close(fig)


def test_long_titles_and_legends_stay_on_the_canvas():
    """A one-panel page with long model names and a long panel title: the title breaks at
    spaces and the legend takes fewer columns, so nothing drawn leaves the canvas (a PNG
    cut from the drawing would lose it, or the figure would be drawn twice)."""
    from evalstats.report._layout import fit_titles, one_legend

    names = ["OLMoE-1B-7B-0924-Instruct", "Llama-3.2-1B-Instruct", "Qwen2.5-72B-Instruct-Turbo"]
    with paper_style():
        fig, axes = panels(1)
        for i, name in enumerate(names):
            axes[0].plot(np.arange(10) + i, label=name)
        axes[0].axhline(1, linestyle="--", label="ε = 0.01")
        axes[0].set_title("mmlu.global_facts · mean (temperature 0.0, provider provider_a)")
        fit_titles(axes)
        one_legend(fig, axes, {n: f"C{i}" for i, n in enumerate(names)}, names)
        fig.canvas.draw()
        ink = fig.get_tightbbox(fig.canvas.get_renderer())
        width, height = fig.get_size_inches()
        title = axes[0].get_title()
        plt.close(fig)
    assert "\n" in title and "provider_a" in title.replace("\n", " ")
    assert not any(len(w) < 3 for w in title.split("\n"))  # no word split
    slack = 1 / 100
    assert ink.x0 >= -slack and ink.y0 >= -slack, ink
    assert ink.x1 <= width + slack and ink.y1 <= height + slack, (ink, width, height)


@pytest.mark.parametrize("ticks_on_top", [False, True])
def test_settled_titles_and_labels_draw_the_same_picture(ticks_on_top):
    """Titles fixed at the top of their axes and empty axis labels given a place draw the
    picture matplotlib's search draws, pixel for pixel; a title over tick labels on top of
    the axes is left to the search (it must clear them)."""
    from evalstats.report._write import settle_decorations

    def picture(settle):
        with paper_style():
            fig, axes = _grid(6)
            shared_axis_labels(fig, axes)  # empty labels in most panels
            if ticks_on_top:
                axes[0].xaxis.set_ticks_position("top")
            if settle:
                settle_decorations(fig)
            buf = io.BytesIO()
            fig.savefig(buf, format="png", dpi=100)
            auto = [ax._autotitlepos for ax in axes]
            plt.close(fig)
        return np.asarray(Image.open(buf).convert("L"), dtype=float), auto

    base, _ = picture(False)
    settled, auto = picture(True)
    assert base.shape == settled.shape
    assert np.abs(base - settled).max() == 0
    assert auto[0] is not False if ticks_on_top else auto[0] is False
    assert all(a is False for a in auto[1:])


def test_png_encoding_keeps_pixels_resolution_and_text():
    """The report's own PNG writer (rows unfiltered): Pillow reads back the same RGBA pixels,
    the resolution and the text chunks; and it is smaller than Pillow's own for a figure."""
    from evalstats.report._write import _encode_png

    rng = np.random.default_rng(1)
    noise = rng.integers(0, 256, size=(7, 5, 4), dtype=np.uint8)
    png = _encode_png(noise, 200, {"Software": "evalstats"})
    back = Image.open(io.BytesIO(png))
    assert back.mode == "RGBA" and np.array_equal(np.asarray(back), noise)
    assert round(back.info["dpi"][0]) == 200 and back.info["Software"] == "evalstats"
    with paper_style():
        fig, _ = _grid(3)
        fig.canvas.draw()
        pixels = np.asarray(fig.canvas.buffer_rgba()).copy()
        plt.close(fig)
    ours = _encode_png(pixels, 300, {})
    back = Image.open(io.BytesIO(ours))
    # an opaque figure is written without its alpha channel, every pixel the same
    assert back.mode == "RGB" and (pixels[..., 3] == 255).all()
    assert np.array_equal(np.asarray(back.convert("RGBA")), pixels)
    theirs = io.BytesIO()
    Image.fromarray(pixels, "RGBA").save(theirs, format="png")
    assert len(ours) < len(theirs.getvalue())


def test_a_report_pdf_embeds_its_font_once(tmp_path):
    """Text past Latin-1 (–, Δ) and ligature pairs (fl, fi) used to start a second embedded
    copy of the font in matplotlib 3.11's PDFs (a second subsetting per figure)."""
    from evalstats.report._layout import FigureSpec
    from evalstats.report._write import draw_one

    def draw(palette):
        fig, axes = panels(2)
        for ax in axes:
            ax.plot([0, 1], [-1, 1])
            ax.set_title("flan-t5 five")
            ax.set_xlabel("Accuracy (0–1)")
            ax.set_ylabel("Δ(n)")
        return fig

    (tmp_path / "figures").mkdir()
    spec = FigureSpec("one_font", "t", "c", "a", draw)
    drawn = draw_one(spec, {}, tmp_path, ("png", "pdf"), serif=False, plt=plt)
    pdf = (tmp_path / drawn.files["pdf"]).read_bytes()
    assert len(_embedded_fonts(pdf)) == 1
    assert b"/ToUnicode" in pdf


@pytest.mark.parametrize("tick_marks", [False, True])
def test_what_lies_inside_a_panel_is_left_out_of_measuring_and_the_picture_stays(
    tick_marks, monkeypatch
):
    """Lines clipped to their panel and spines along its edge are not measured (they lie in
    the panel's box); a spine whose axis shows tick marks is (they reach past the edge), and
    so is what is not clipped. The pixels are the same either way, the boxes to 1e-12."""
    from evalstats.report import _write

    def picture():
        with paper_style():
            fig, axes = _grid(4)
            axes[1].plot([0, 60], [0, 9], clip_on=False)  # may reach out: measured
            if tick_marks:
                for ax in axes:
                    ax.tick_params(axis="x", bottom=True)
            png, bbox = _png_and_box(fig, plt)  # settles the figure first
            boxes = [tuple(ax.get_position().bounds) for ax in axes]
            out = {id(a) for ax in axes for a in ax.get_children() if not a.get_in_layout()}
            sides = [(id(axes[0].lines[0]), id(axes[1].lines[-1]))]
            sides.append(tuple(id(axes[0].spines[s]) for s in ("bottom", "left")))
            plt.close(fig)
        return np.asarray(Image.open(io.BytesIO(png))), tuple(bbox.bounds), boxes, out, sides

    ours, bbox, boxes, out, (lines, spines) = picture()
    monkeypatch.setattr(_write, "_inside_the_panel", lambda ax: [])
    theirs, bbox0, boxes0, out0, _ = picture()
    assert not out0
    assert np.array_equal(ours, theirs)
    # the same boxes but for the last bit of a float (the union is taken over fewer boxes)
    assert np.allclose(bbox, bbox0, rtol=0, atol=1e-9)
    assert np.allclose(boxes, boxes0, rtol=0, atol=1e-12)
    assert lines[0] in out and lines[1] not in out  # clipped / not clipped
    assert (spines[0] in out) is not tick_marks and spines[1] in out


def test_the_svg_beside_a_pdf_keeps_its_ligatures(tmp_path):
    """The PDF is drawn without ligatures (one embedded font); the SVG (text as paths) is not."""
    from matplotlib.font_manager import FontProperties, findfont, get_font
    from matplotlib.ft2font import LoadFlags

    from evalstats.report._layout import FigureSpec
    from evalstats.report._write import draw_one

    def draw(palette):
        fig, axes = panels(1)
        axes[0].set_title("difference")  # "ff": a ligature of DejaVu Sans
        return fig

    (tmp_path / "figures").mkdir()
    spec = FigureSpec("lig", "t", "c", "a", draw)
    files = draw_one(spec, {}, tmp_path, ("pdf", "svg"), serif=False, plt=plt).files
    svg = (tmp_path / files["svg"]).read_text()
    with paper_style():
        font = get_font(findfont(FontProperties()))
    (ff,) = font._layout("ff", LoadFlags.NO_HINTING)  # one glyph for two characters
    assert f"DejaVuSans-{ff.glyph_index:x}" in svg


def test_the_layout_runs_once_for_the_png_and_the_pdf(tmp_path, monkeypatch):
    """The PNG's drawing lays the figure out; the PDF is drawn at the places found (the
    engine is off after that drawing), not laid out again."""
    from matplotlib.layout_engine import ConstrainedLayoutEngine

    from evalstats.report._layout import FigureSpec
    from evalstats.report._write import draw_one

    runs = []
    execute = ConstrainedLayoutEngine.execute
    monkeypatch.setattr(
        ConstrainedLayoutEngine, "execute", lambda self, fig: runs.append(1) or execute(self, fig)
    )
    (tmp_path / "figures").mkdir()
    spec = FigureSpec("once", "t", "c", "a", lambda palette: _grid(4)[0])
    draws = []
    draw = matplotlib.figure.Figure.draw
    monkeypatch.setattr(
        matplotlib.figure.Figure,
        "draw",
        lambda self, renderer: draws.append(type(renderer).__name__) or draw(self, renderer),
    )
    drawn = draw_one(spec, {}, tmp_path, ("png", "pdf"), serif=False, plt=plt)
    assert set(drawn.files) == {"png", "pdf"}
    assert len(runs) == 1
    # one drawing each: while a figure has any layout engine (even matplotlib's placeholder
    # for "none"), savefig draws it once more before writing
    assert draws == ["RendererAgg", "MixedModeRenderer"]


def test_rows_of_models_follow_the_reports_order_in_every_figure():
    """The demo's noise components listed the models as the analysis table sorted them (m0
    first) while the forests put the best first (m2): a model's row moved between figures.
    Every figure with a row per model now follows the report's order."""
    import polars as pl

    from evalstats.demo import demo_path
    from evalstats.report import ANALYSES, audit_report
    from evalstats.report._figures import figure_specs, ranked_models, report_palette

    keep = ("intervals", "noise")
    obs = pl.read_parquet(demo_path())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rep = audit_report(obs, skip=[a.key for a in ANALYSES if a.key not in keep])
    ranked = ranked_models(rep)
    assert ranked[0] != sorted(ranked)[0]  # the premise: best first is not the name order
    pal = report_palette(rep)
    drawn = {}
    for spec in figure_specs(rep):
        if spec.key in ("intervals", "noise_components"):
            with paper_style():
                fig = spec.draw(pal)
            ax = fig.axes[0]
            fmt, locs = ax.yaxis.get_major_formatter(), ax.yaxis.get_major_locator().locs
            rows = [fmt(v, i) for i, v in enumerate(locs)]
            top_first = rows if ax.get_ylim()[0] > ax.get_ylim()[1] else rows[::-1]
            drawn[spec.key] = top_first
            plt.close(fig)
    assert drawn == {"intervals": ranked, "noise_components": ranked}


def test_agreement_over_many_datasets_gives_each_dataset_a_row():
    """Issue 41: over 42 datasets the agreement heatmap's slanted column names overprinted
    one another; past 12 datasets each dataset is a row, named upright."""
    import numpy as np
    import polars as pl

    from evalstats.report import ANALYSES, audit_report
    from evalstats.report._figures import figure_specs, report_palette

    rng = np.random.default_rng(0)
    rows = [
        {"model": m, "dataset": f"task_{d:02d}", "item": f"i{i}", "run": r,
         "score": float(rng.random() < 0.6), "answer": str(rng.integers(0, 3))}
        for m in ("a", "b") for d in range(42) for i in range(12) for r in range(3)
    ]  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rep = audit_report(
            pl.DataFrame(rows), skip=[a.key for a in ANALYSES if a.key != "stability"]
        )
    spec = next(s for s in figure_specs(rep) if s.key == "stability")
    with paper_style():
        fig = spec.draw(report_palette(rep))
    ax = fig.axes[0]
    labels = [t for t in ax.get_yticklabels() if t.get_text()]
    assert len(labels) == 42 and all(t.get_rotation() == 0 for t in labels)
    plt.close(fig)


def test_forest_panels_of_groups_without_a_value_are_drawn():
    """A held column empty for some groups (a real lm-eval folder: doc_set only on one task):
    those panels were drawn empty (``== None`` keeps no row); each panel now shows its models."""
    import polars as pl

    from evalstats.report._forest import forest

    t = pl.DataFrame(
        {
            "model": ["a", "b", "a", "b", "a"],
            "dataset": ["d1", "d1", "d2", "d2", "d2"],
            "doc_set": [None, None, "10 docs", "10 docs", "9 docs"],
            "over": ["items"] * 5,  # intervals() puts its group columns before `over`
            "mean": [0.2, 0.4, 0.3, 0.5, 0.1],
            "ci_low": [0.1, 0.3, 0.2, 0.4, 0.0],
            "ci_high": [0.3, 0.5, 0.4, 0.6, 0.2],
        }
    )
    (spec,) = forest("intervals", "Means", "Means.", "intervals", t, "tables/intervals.csv")
    fig = spec.draw({"a": "C0", "b": "C1"})
    titles = [ax.get_title() for ax in fig.axes if ax.get_title()]
    assert titles == ["d1, doc_set –", "d2, doc_set 10 docs", "d2, doc_set 9 docs"]
    drawn = [len(ax.get_yticks()) for ax in fig.axes if ax.get_title()]
    assert drawn == [2, 2, 1]
    plt.close(fig)


@pytest.mark.parametrize("n_datasets", [1, 3])
def test_one_models_noise_legend_stays_clear_of_the_axis_label(n_datasets):
    """A one-model, one-dataset sparse MMLU report drew the component legend (with its title
    "not separable here: ...") over the two-line x label: the panel was 0.85 in plus the bars."""
    import polars as pl

    from evalstats.report import ANALYSES, audit_report
    from evalstats.report._figures import figure_specs, report_palette
    from evalstats.simulate import observations

    obs = observations(n_models=1, n_items=40, n_variants=6, n_datasets=n_datasets, seed=2)
    obs = obs.filter(pl.Series(np.random.default_rng(1).random(obs.height) < 0.6))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rep = audit_report(obs, skip=[a.key for a in ANALYSES if a.key != "noise"])
    (spec,) = [s for s in figure_specs(rep) if s.key == "noise_components"]
    with paper_style():
        fig = spec.draw(report_palette(rep))
        fig.canvas.draw()
        renderer = fig.canvas.get_renderer()
    legend = fig.legends[0].get_window_extent(renderer)
    xlabel = fig.axes[0].xaxis.label.get_window_extent(renderer)
    plt.close(fig)
    assert "\n" in fig.axes[0].get_xlabel()  # the premise: a label on two lines
    assert legend.y1 <= xlabel.y0 + 1.0, (legend, xlabel)
