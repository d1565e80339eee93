"""The `/schema` docs page: Swagger UI from files the API serves itself (`api/static/`), pinned.

Served from here, not a CDN, so that the page renders without internet and no third-party script
runs where users paste their API keys ("Authorize"). The files are those of the npm package
`swagger-ui-dist` (Apache-2.0), checked against `SHA256` by the tests.
"""

from __future__ import annotations

from pathlib import Path

from litestar import Router
from litestar.datastructures import CacheControlHeader
from litestar.openapi.plugins import SwaggerRenderPlugin
from litestar.static_files import create_static_files_router

VERSION = "5.35.0"
ASSETS = Path(__file__).parent / "static" / f"swagger-ui-{VERSION}"
ASSETS_PATH = f"/schema/assets/swagger-ui-{VERSION}"
"""Where the page loads them from (versioned: a file never changes under its URL)."""
SHA256 = {
    "swagger-ui-bundle.js": "e6a898692f2d768e807c3ba4626068a69a2c5dd960dd6c76f3e4d3a3de180af2",
    "swagger-ui-standalone-preset.js": "5243d492e14505e0cab87ac8b0195d0e615943e651743b2b698450a46eb470be",
    "swagger-ui.css": "5ed08757e53da3e026d6cbecc61fe5d43585c9560b302d534ad56692519a273d",
}  # fmt: skip
NO_FAVICON = "<link rel='icon' href='data:,'>"
"""Litestar's default favicon is on a CDN; the page asks for none."""


def swagger_page() -> SwaggerRenderPlugin:
    """Swagger UI at `/schema` (the first render plugin is the root page) and `/schema/swagger`."""
    return SwaggerRenderPlugin(
        version=VERSION,
        js_url=f"{ASSETS_PATH}/swagger-ui-bundle.js",
        css_url=f"{ASSETS_PATH}/swagger-ui.css",
        standalone_preset_js_url=f"{ASSETS_PATH}/swagger-ui-standalone-preset.js",
        favicon=NO_FAVICON,
    )


def assets_router() -> Router:
    """The files, unmetered like the page, cached for a year (their URL names their version)."""
    return create_static_files_router(
        path=ASSETS_PATH,
        directories=[ASSETS],
        include_in_schema=False,
        cache_control=CacheControlHeader(public=True, max_age=365 * 24 * 3600),
    )
