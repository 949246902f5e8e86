"""The HTML pages (``report.html``, ``index.html``) as jinja2 templates in ``templates/``."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

__all__ = ["render", "TEMPLATES"]

#: the folder of the page templates (``*.html.j2``) and their shared macros
TEMPLATES = Path(__file__).resolve().parent / "templates"


@lru_cache(maxsize=1)
def _env() -> Any:  # noqa: ANN401 - jinja2.Environment, imported lazily
    import jinja2

    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES)),
        autoescape=jinja2.select_autoescape(enabled_extensions=("html", "j2"), default=True),
        undefined=jinja2.StrictUndefined,  # a missing value is an error, not an empty cell
        trim_blocks=True,
        lstrip_blocks=True,
    )


def render(template: str, **context: Any) -> str:  # noqa: ANN401
    """Render ``templates/<template>`` with ``context`` (values HTML-escaped).

    >>> from reveal_lab.render import table_cells
    >>> import polars as pl
    >>> page = render("table.html.j2", t=table_cells(pl.DataFrame({"a": ["<b>"]})))
    >>> "<td>&lt;b&gt;</td>" in page
    True
    """
    return _env().get_template(template).render(**context)
