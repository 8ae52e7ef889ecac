"""The files of a report folder: each figure, each analysis's tables, results.json.

:class:`~evalstats.report._writer.ReportWriter` calls these as the analyses finish and writes
the pages last.
"""

from __future__ import annotations

import contextlib
import io
import types
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalstats.errors import EvalstatsError, ParameterError
from evalstats.report._model import (
    RenderedFigure,
    RenderedTable,
    ReportContents,
    table_key,
    table_title,
)

if TYPE_CHECKING:
    from evalstats.report._figures import FigureSpec
    from evalstats.report._model import AnalysisResult

__all__ = [
    "FIGURE_FORMATS",
    "check_figure_formats",
    "draw_one",
    "number_tables",
    "results_document",
    "write_tables_of",
]

#: matplotlib's notes about its layout engine, which name no data problem.
_LAYOUT_NOTES = (
    r"(?i).*(constrained_layout|tight_layout|tight layout|layout engine|glyph \d+|"
    r"no artists with labels|creating legend with loc)"
)

#: Figure file formats ``write`` accepts.
FIGURE_FORMATS = ("png", "pdf", "svg")


def check_figure_formats(figure_formats: Sequence[str]) -> tuple[str, ...]:
    """The formats, lower-cased and de-duplicated; ParameterError for an unknown one.

    ``'none'`` alone (or an empty sequence given as ``('none',)``) draws no figure: the
    report's tables and text only, the analysis floor of its time. ``'all'`` is every format.
    """
    formats = tuple(dict.fromkeys(f.strip().lower().lstrip(".") for f in figure_formats))
    if formats == ("none",):
        return ()
    if formats == ("all",):
        return FIGURE_FORMATS
    bad = [f for f in formats if f not in FIGURE_FORMATS]
    if bad or not formats:
        raise ParameterError(
            f"`figure_formats` must name some of {', '.join(FIGURE_FORMATS)} (or 'all', or "
            f"'none' for no figures), got "
            f"{', '.join(map(repr, figure_formats)) or 'none'}."
        )
    return formats


@contextlib.contextmanager
def _lean_pdf_fonts() -> Iterator[None]:
    """PDF fonts subset without their layout tables (GSUB, GPOS, GDEF, kern), inside the block.

    A PDF embeds each font as a subset (``pdf.fonttype`` 42, which journals ask for); most of
    the time of writing a figure's PDF went to fontTools reading DejaVu Sans's kerning and
    substitution tables to subset them (0.3 s of 1.2 s per figure), though a PDF places
    glyphs by position and never reads them (copied text comes from the ToUnicode map). The
    embedded subsets are then smaller and the pages draw the same. Matplotlib builds its
    subset options in ``matplotlib.backends._backend_pdf_ps``; where that module is not laid
    out as expected this does nothing.
    """
    try:
        from fontTools import subset
        from matplotlib.backends import _backend_pdf_ps as pdf_ps
    except ImportError:  # pragma: no cover - matplotlib always brings fontTools
        yield
        return
    if getattr(pdf_ps, "subset", None) is not subset:
        yield
        return

    # the legacy kerning table too: the subsetter drops it only while GPOS is there
    layout = ("GSUB", "GPOS", "GDEF", "kern")

    class _Options(subset.Options):  # type: ignore[misc, name-defined]
        def __init__(self, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            self.drop_tables += list(layout)

    def load_font(*args: Any, **kwargs: Any) -> Any:
        # fontTools 4.6x reads the layout tables whole before the subsetter drops them
        # (``Subsetter.subset`` looks for 64k-glyph formats in them first): removed unread
        font = subset.load_font(*args, **kwargs)
        for tag in layout:
            if tag in font:
                del font[tag]
        return font

    shim = types.SimpleNamespace(**{k: getattr(subset, k) for k in dir(subset)})
    shim.Options = _Options
    shim.load_font = load_font
    pdf_ps.subset = shim
    try:
        yield
    finally:
        pdf_ps.subset = subset


@contextlib.contextmanager
def _pdf_without_ligatures(fig: Any) -> Iterator[None]:
    """The figure's text set without ligatures (fi, fl) inside the block, for its PDF.

    Matplotlib 3.11 shapes text with its font's ligatures and puts every glyph that stands
    for several characters into a second subset of the font, which the PDF embeds as a second
    copy of it: one more fontTools subsetting per figure (0.04 s, of a small figure's 0.12 s)
    for the "fl" of "flan-t5". Spelled as two glyphs in the PDF, the text looks the same and
    copies as what it says. The PNG and SVG keep the ligatures; explicit features of a text
    are kept.
    """
    from matplotlib.text import Text

    texts = [t for t in fig.findobj(Text) if t.get_fontfeatures() is None]
    for t in texts:
        t.set_fontfeatures(("-liga", "-clig"))
    try:
        yield
    finally:
        for t in texts:
            t.set_fontfeatures(None)


#: Resolution of the PNG when a vector format (PDF, SVG) is written beside it: the PNG is then
#: the screen copy (the HTML page; 2x a 96 dpi screen), the vector file the one for print.
#: Alone, the PNG is the print copy at ``savefig.dpi`` (300).
SCREEN_DPI = 200


def settle_decorations(fig: Any) -> None:
    """Fix the places matplotlib would search for at every drawing, where the search is moot.

    With no tick marks (the style's), matplotlib cannot tell where an axis's tick labels are
    and, at every drawing of every panel, measures all of them to put the title above them;
    it also measures the tick labels of every panel sharing an axis to place an axis label,
    even an empty one. In a 24-panel page that is most of the layout's time. A title over an
    axes whose tick labels and label are all below it goes where the search would put it, at
    the top of the axes; an empty axis label has no place to find. Both are set once here.

    The boxes that measure the figure (the layout's two passes, the tight box) also ask every
    artist of a panel whether it is clipped to the panel, and every spine where its axis's
    tick marks reach, updating all the ticks to find out. What is clipped to the panel, and
    a spine along the panel's edge with no tick marks, lie inside the panel's own box, which
    is always counted: left out of the measuring (:func:`_inside_the_panel`), the boxes and
    the picture are the same.
    """
    for ax in fig.axes:
        for artist in _inside_the_panel(ax):
            artist.set_in_layout(False)
        for axis, coords in ((ax.xaxis, (0.5, 0.0)), (ax.yaxis, (0.0, 0.5))):
            if not axis.label.get_text():
                axis.set_label_coords(*coords)
        title = ax.title
        if not title.get_text() or ax.xaxis.get_label_position() != "bottom":
            continue
        ticks = ax.xaxis.get_major_ticks()
        if ticks and ticks[0].label2.get_visible():
            continue  # labels above the axes: the title must clear them
        ax.set_title(
            title.get_text(),
            y=1.0,
            fontsize=title.get_fontsize(),
            fontweight=title.get_fontweight(),
            color=title.get_color(),
        )


def _inside_the_panel(ax: Any) -> list[Any]:
    """Artists of ``ax`` that lie inside its box whatever the layout does.

    Those clipped to the axes (matplotlib's own test, which leaves them out of every tight
    box already), and its straight spines at their default place along the whole edge when
    no tick mark of their axis shows (a spine's box reaches past the edge only by the tick
    marks' length). Nothing where matplotlib's private test is missing.
    """
    from matplotlib.axes import Axes
    from matplotlib.axis import Axis
    from matplotlib.offsetbox import AnnotationBbox, OffsetBox

    if not hasattr(ax.patch, "_fully_clipped_to_axes"):  # pragma: no cover - another matplotlib
        return []
    always = (Axes, Axis, AnnotationBbox, OffsetBox)  # matplotlib measures these regardless
    inside = [
        a
        for a in ax.get_children()
        if not isinstance(a, always) and a.get_in_layout() and a._fully_clipped_to_axes()
    ]
    for side, spine in ax.spines.items():
        axis = spine.axis
        if (
            side not in ("left", "right", "bottom", "top")
            or getattr(spine, "_patch_type", None) != "line"
            or axis is None
            or spine.get_bounds() is not None
            or tuple(spine.get_position()) != ("outward", 0.0)
        ):
            continue
        # the first tick of each kind: tick_params sets them all alike (every tick would be
        # made and placed here, before the drawing places them again)
        ticks = [*axis.majorTicks[:1], *axis.minorTicks[:1]]
        if not any(t.tick1line.get_visible() or t.tick2line.get_visible() for t in ticks):
            inside.append(spine)
    return inside


def _png_and_box(fig: Any, plt: Any, dpi: float | None = None) -> tuple[bytes, Any]:
    """The PNG of ``fig`` and its tight box, from one drawing that also lays the figure out.

    ``savefig(bbox_inches="tight")`` draws a figure twice per file (once to measure it, once
    to render it) and runs the layout engine each time. Here the Agg drawing at the PNG's
    resolution runs the layout engine, the tight box is measured on that drawing and the PNG
    is its pixels cut to the box (the padding around the ink in the figure's colour): one
    layout pass and one drawing for the PNG, two when something drawn reaches beyond the
    canvas, which the first drawing could not hold. The layout is then fixed (engine
    off) and the vector formats are cut to the same box, one drawing each.
    """
    import numpy as np
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.colors import to_rgba

    dpi = float(plt.rcParams["savefig.dpi"] if dpi is None else dpi)
    settle_decorations(fig)
    canvas = FigureCanvasAgg(fig)  # the figure's canvas for the rest of its life
    fig.set_dpi(dpi)
    canvas.draw()
    renderer = canvas.get_renderer()
    ink = fig.get_tightbbox(renderer)
    bbox = ink.padded(plt.rcParams["savefig.pad_inches"])
    _keep_layout(fig, plt)
    pixels = np.asarray(canvas.buffer_rgba())
    h, w = pixels.shape[:2]
    width, height = fig.get_size_inches()
    slack = 1.0 / dpi  # the ink's box may pass the edge by a rounding pixel
    if ink.x0 < -slack or ink.y0 < -slack or ink.x1 > width + slack or ink.y1 > height + slack:
        # something drawn reaches beyond the canvas (a legend below or beside the panels): the
        # drawing could not hold it, so this figure is drawn again on a canvas of the box's size
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=dpi, bbox_inches=bbox, metadata=_metadata("png"))
        return buf.getvalue(), bbox
    x0, x1 = round(bbox.x0 * dpi), round(bbox.x1 * dpi)
    top, bottom = round(h - bbox.y1 * dpi), round(h - bbox.y0 * dpi)
    if x0 >= 0 and top >= 0 and x1 <= w and bottom <= h:
        cut = pixels[top:bottom, x0:x1]
    else:  # the padding reaches beyond the canvas: the figure's colour there, as savefig
        colour = np.array(to_rgba(fig.get_facecolor())) * 255
        cut = np.empty((bottom - top, x1 - x0, 4), dtype=np.uint8)
        cut[:] = np.round(colour).astype(np.uint8)
        sy0, sy1, sx0, sx1 = max(top, 0), min(bottom, h), max(x0, 0), min(x1, w)
        cut[sy0 - top : sy1 - top, sx0 - x0 : sx1 - x0] = pixels[sy0:sy1, sx0:sx1]
    return _encode_png(cut, dpi, _metadata("png")), bbox


def _keep_layout(fig: Any, plt: Any) -> None:
    """Keep the places the layout found: the figure left without a layout engine.

    Not ``set_layout_engine("none")``: that leaves a placeholder engine, and while a figure has
    any engine, ``savefig`` draws it once more before writing (to let the engine run), which
    for the PDF was a third of its time (24 drawings for 12 figures). With none, the vector
    file is drawn once, at the same places (tested).
    """
    with plt.rc_context({"figure.autolayout": False, "figure.constrained_layout.use": False}):
        fig.set_layout_engine(None)


def _encode_png(rgba: Any, dpi: float, text: dict[str, str]) -> bytes:
    """An RGBA array as PNG bytes: rows unfiltered, deflated at zlib's default level.

    An opaque picture (a report's figures have a white face) is written as RGB: a quarter
    less to deflate (0.19 -> 0.15 s for four report pages) and a 5 % smaller file.

    Pillow picks a filter for every row by trying all five (libpng's heuristic); on a
    figure's flat colours and thin lines that took more time than the compression and gave a
    larger file than no filter (SoWA BBH's 12 PNGs: 1.05 s and 1.86 MB, unfiltered 0.60 s
    and 1.69 MB). The pixels decoded are the same; the resolution and the text go in
    ``pHYs`` and ``tEXt`` chunks, as Pillow writes them.
    """
    import struct
    import zlib

    import numpy as np

    def chunk(tag: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data))

    h, w = rgba.shape[:2]
    rgba = np.asarray(rgba, dtype=np.uint8)
    opaque = bool((rgba[..., 3] == 255).all())
    channels, colour_type = (3, 2) if opaque else (4, 6)  # 8-bit RGB, or RGBA
    rows = np.zeros((h, 1 + channels * w), dtype=np.uint8)  # each row: filter 0, the pixels
    rows[:, 1:] = rgba[..., :channels].reshape(h, channels * w)
    per_metre = int(dpi / 0.0254 + 0.5)
    parts = [
        b"\x89PNG\r\n\x1a\n",
        chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, colour_type, 0, 0, 0)),
        chunk(b"pHYs", struct.pack(">IIB", per_metre, per_metre, 1)),
        *(
            chunk(b"tEXt", k.encode("latin-1") + b"\0" + v.encode("latin-1"))
            for k, v in text.items()
        ),
        chunk(b"IDAT", zlib.compress(rows.tobytes(), 6)),
        chunk(b"IEND", b""),
    ]
    return b"".join(parts)


def draw_one(
    spec: FigureSpec,
    palette: dict[str, Any],
    out: Path,
    formats: tuple[str, ...],
    *,
    serif: bool,
    plt: Any,
) -> RenderedFigure | dict[str, str]:
    """Draw and save one figure; the reason as a dict when its data cannot be drawn."""
    from evalstats.plots import paper_style

    with paper_style(serif=serif), warnings.catch_warnings():
        # layout notes of matplotlib/seaborn are about drawing, not about the data: a
        # figure that needs one is a bug of its layout, which the figure tests catch
        warnings.filterwarnings("ignore", category=UserWarning, module="matplotlib")
        # the same notes attributed to the line that saves the figure (savefig's layout pass)
        warnings.filterwarnings("ignore", message=_LAYOUT_NOTES, category=UserWarning)
        for category in (DeprecationWarning, FutureWarning, PendingDeprecationWarning):
            warnings.filterwarnings("ignore", category=category, module="seaborn")
        try:
            fig = spec.draw(palette)
        except EvalstatsError as exc:
            return {"key": spec.key, "analysis": spec.analysis, "reason": str(exc)}
        try:
            # the PNG (written, or only shown in the HTML) is drawn once, with the layout
            vector = any(f in ("pdf", "svg") for f in formats)
            png, bbox = _png_and_box(fig, plt, SCREEN_DPI if vector else None)
            files = {}
            for fmt in formats:
                path = out / "figures" / f"{spec.key}.{fmt}"
                if fmt == "png":
                    path.write_bytes(png)  # a failure: the writer's OutputError names the file
                elif fmt == "pdf":
                    with _lean_pdf_fonts(), _pdf_without_ligatures(fig):
                        fig.savefig(path, bbox_inches=bbox, metadata=_metadata(fmt))
                else:
                    fig.savefig(path, bbox_inches=bbox, metadata=_metadata(fmt))
                files[fmt] = path.relative_to(out).as_posix()
            width, height = fig.get_size_inches()
        finally:
            plt.close(fig)
    return RenderedFigure(
        number=0,
        key=spec.key,
        title=spec.title,
        caption=spec.caption,
        analysis=spec.analysis,
        files=files,
        png=png,
        width_in=float(width),
        height_in=float(height),
    )


def _metadata(fmt: str) -> dict[str, Any]:
    # no creation date: the same report gives the same files
    if fmt == "pdf":
        return {"CreationDate": None, "Creator": "evalstats"}
    if fmt == "svg":
        return {"Date": None, "Creator": "evalstats"}
    return {"Software": "evalstats"}


def write_tables_of(result: AnalysisResult, out: Path) -> list[RenderedTable]:
    """Write the CSV (and LaTeX, up to :data:`TEX_MAX_ROWS` rows) files of one analysis.

    The entries are unnumbered (``number`` 1 for a shown table, 0 for a hidden one);
    :func:`number_tables` numbers the report's tables in report order.
    """
    from evalstats.report._tables import (
        HIDDEN,
        TEX_MAX_ROWS,
        display_frame,
        to_latex,
        write_csv,
    )

    one = ReportContents((result,), (), None, None, {}, {}, {})  # type: ignore[arg-type]
    (out / "tables").mkdir(parents=True, exist_ok=True)
    written = []
    for name, frame in result.tables.items():
        key = table_key(result.key, name)
        title = table_title(one, result.key, name)
        write_csv(frame, out / "tables" / f"{key}.csv")
        files = {"csv": f"tables/{key}.csv"}
        shown = display_frame(result.key, name, frame)
        if shown.height <= TEX_MAX_ROWS:
            (out / "tables" / f"{key}.tex").write_text(
                to_latex(shown, caption=title, label=f"tab:{key.replace('_', '-')}"),
                encoding="utf-8",
            )
            files["tex"] = f"tables/{key}.tex"
        number = 0 if (result.key, name) in HIDDEN else 1
        written.append(RenderedTable(number, key, result.key, name, title, files))
    return written


def number_tables(tables: Sequence[RenderedTable]) -> list[RenderedTable]:
    """The shown tables numbered 1, 2, ... in the order given (hidden ones keep 0)."""
    n = 0
    numbered = []
    for t in tables:
        if t.number:
            n += 1
            t = replace(t, number=n)
        numbered.append(t)
    return numbered


def results_document(
    report: ReportContents,
    figures: Sequence[RenderedFigure],
    tables: Sequence[RenderedTable],
    failed: Sequence[dict[str, str]],
) -> dict[str, Any]:
    """``results.json``: :meth:`AuditReport.to_dict` plus the files written."""
    from evalstats.report._render import report_document

    doc = report_document(report)
    files = {(t.analysis, t.name): t.files for t in tables}
    for entry in doc["analyses"]:
        for name, table in entry["tables"].items():
            table["files"] = files.get((entry["key"], name), {})
        entry["figures"] = [f.key for f in figures if f.analysis == entry["key"]]
    doc["figures"] = [
        {
            "key": f.key,
            "title": f.title,
            "caption": f.caption,
            "analysis": f.analysis,
            "files": f.files,
        }
        for f in figures
    ]
    doc["figures_skipped"] = list(failed)
    return doc
