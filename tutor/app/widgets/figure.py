"""The figure pane beside the output: the last figure the learner's code drew, as an image.

Figures arrive as PNG bytes in display bundles (the kernel's matplotlib inline backend); the
UI process never imports matplotlib. textual-image draws them with the terminal's graphics
protocol (Kitty or Sixel) where the terminal has one and with Unicode half blocks elsewhere
(tmux, screen, most terminals over SSH).

textual-image finds the protocol by asking the terminal when it is first imported, which
must happen before the app reads the terminal, and which costs the first paint a PIL import
and up to a few tenths of a second of waiting for answers. So it is asked only where the
environment names a terminal that may draw images (``detect_graphics``, called before the
app starts); everywhere else the first figure imports textual-image without letting it ask
anything (its question would be answered into the app's keyboard input) and draws half
blocks. ``PTFUND_TUTOR_IMAGES=detect`` always asks; ``=blocks`` never does.
"""

from __future__ import annotations

import base64
import binascii
import io
import os
import sys
from collections.abc import Callable, Mapping

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widget import Widget
from textual.widgets import Static

# Terminals that may speak the Kitty or Sixel graphics protocol, by $TERM or $TERM_PROGRAM.
GRAPHICS_TERMS = ("kitty", "foot", "mlterm", "wezterm", "ghostty", "contour")
GRAPHICS_PROGRAMS = {"WezTerm", "ghostty", "iTerm.app", "mintty"}
GRAPHICS_MARKERS = ("KITTY_WINDOW_ID", "KONSOLE_VERSION", "WEZTERM_EXECUTABLE")
_asked_terminal = False


def terminal_may_draw_images(env: Mapping[str, str] = os.environ) -> bool:
    choice = env.get("PTFUND_TUTOR_IMAGES", "").strip().lower()
    if choice in ("detect", "blocks"):
        return choice == "detect"
    if env.get("TMUX") or env.get("STY"):
        return False  # multiplexers do not pass graphics through unless told to
    term = env.get("TERM", "").lower()
    return (
        any(name in term for name in GRAPHICS_TERMS)
        or env.get("TERM_PROGRAM", "") in GRAPHICS_PROGRAMS
        or any(marker in env for marker in GRAPHICS_MARKERS)
    )


def detect_graphics() -> None:
    """Before the app starts: let textual-image ask the terminal, where it may have graphics."""
    global _asked_terminal
    if terminal_may_draw_images():
        import textual_image.widget  # noqa: F401

        _asked_terminal = True


def _image_class() -> Callable[..., Widget]:
    if _asked_terminal:
        from textual_image.widget import Image

        return Image
    # Imported with a stdout that is not a terminal, textual-image asks nothing.
    real = sys.__stdout__
    sys.__stdout__ = io.StringIO()  # type: ignore[misc,assignment]
    try:
        from textual_image.widget import HalfcellImage
    finally:
        sys.__stdout__ = real  # type: ignore[misc]
    return HalfcellImage


def figure_image(png: bytes) -> Widget:
    """A textual-image widget showing ``png`` (a Static saying why when it cannot be read)."""
    from PIL import Image as PILImage

    Image = _image_class()

    try:
        picture = PILImage.open(io.BytesIO(png))
        picture.load()
    except Exception as exc:  # a broken bundle: say so, never a traceback
        return Static(f"This figure could not be shown: {exc}", classes="figure-error")
    return Image(picture, classes="figure-image")


def cell_ratio() -> float:
    """How many times taller than wide a terminal cell is (2 when the terminal does not say)."""
    from tutor.app._textual_compat import terminal_cell_ratio

    return terminal_cell_ratio()


def fit(pixels: tuple[int, int], cols: int, rows: int, ratio: float = 2.0) -> tuple[int, int]:
    """The largest (cols, rows) within the given ones that keeps the picture's proportions."""
    px_w, px_h = pixels
    if px_w <= 0 or px_h <= 0 or cols <= 0 or rows <= 0:
        return max(cols, 1), max(rows, 1)
    w, h = cols, round(cols * px_h / px_w / ratio)
    if h > rows:
        h, w = rows, round(rows * ratio * px_w / px_h)
    return max(w, 1), max(h, 1)


def size_image(image: Widget, cols: int, rows: int) -> None:
    """Give a figure widget an explicit size: textual-image cannot scale to a 1fr box."""
    pixels = getattr(image, "_image_width", 0), getattr(image, "_image_height", 0)
    w, h = fit(pixels, cols, rows, cell_ratio())
    image.styles.width, image.styles.height = w, h


def decode_png(text: str) -> bytes | None:
    try:
        return base64.b64decode(text, validate=False)
    except (binascii.Error, ValueError):
        return None


class FigurePane(Vertical):
    """The latest figure, captioned; hidden until the first one arrives."""

    DEFAULT_CSS = """
    FigurePane {
        width: 1fr;
        max-width: 50%;
        display: none;
        border-left: vkey $panel-lighten-2;
        &.-shown { display: block; }
        & > #figure-caption { height: 1; color: $text-muted; padding: 0 1; }
    }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.png: bytes | None = None
        self.number = 0

    def compose(self) -> ComposeResult:
        yield Static("", id="figure-caption")

    async def show(self, png_text: str, number: int) -> None:
        png = decode_png(png_text)
        if png is None:
            return
        self.png, self.number = png, number
        await self.query(".figure-image, .figure-error").remove()
        self.query_one("#figure-caption", Static).update(f"Figure {number} (ctrl+p: enlarge figure)")
        await self.mount(figure_image(png))
        self.add_class("-shown")
        self.call_after_refresh(self._size_image)

    def _size_image(self) -> None:
        region = self.content_region
        for image in self.query(".figure-image"):
            size_image(image, region.width, region.height - 1)

    def on_resize(self) -> None:
        self._size_image()

    async def clear(self) -> None:
        self.png, self.number = None, 0
        await self.query(".figure-image, .figure-error").remove()
        self.remove_class("-shown")

    def on_click(self) -> None:
        if self.png is not None:
            self.app.push_screen(FigureScreen(self.png, self.number))


class FigureScreen(ModalScreen[None]):
    """One figure as large as the terminal allows."""

    BINDINGS = [Binding("escape,q,enter", "dismiss", "Close", id="figure.close")]

    def __init__(self, png: bytes, number: int) -> None:
        super().__init__()
        self.png, self.number = png, number

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog wide tall", id="figure-dialog"):
            yield Static(f"Figure {self.number} (esc closes)", classes="dialog-title")
            yield figure_image(self.png)

    def on_mount(self) -> None:
        self.call_after_refresh(self._size_image)

    def on_resize(self) -> None:
        self.call_after_refresh(self._size_image)

    def _size_image(self) -> None:
        dialog = self.query_one("#figure-dialog")
        region = dialog.content_region
        for image in self.query(".figure-image"):
            size_image(image, region.width, region.height - 2)  # the title and its margin
