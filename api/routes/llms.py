"""`/llms.txt`, `/llms-full.txt` and the Markdown twin of the docs: the API described for LLM
agents (llmstxt.org), rendered once per app from the finished OpenAPI document (`api.llms`).
Public and never metered, like the docs page."""

from __future__ import annotations

from typing import Any

from litestar import Controller, Litestar, Request, Response, get
from litestar.exceptions import NotFoundException
from litestar.params import FromPath

from api.llms import llms_full_txt, llms_txt, operation_page, operations
from api.openapi import finished_document

MARKDOWN = "text/markdown"
"""Litestar adds `charset=utf-8` to a text type."""
CACHED = {"Cache-Control": "public, max-age=300"}


def _pages(app: Litestar) -> dict[str, bytes]:
    """Every page by its path, rendered at the first request (the document is built then too)."""
    pages: dict[str, bytes] | None = app.state.get("llms_pages")
    if pages is None:
        document = finished_document(app)
        full = llms_full_txt(document).encode()
        pages = {
            "/llms.txt": llms_txt(document).encode(),
            "/llms-full.txt": full,
            "/schema.md": full,
        }
        for path, operation in operations(document):
            page = operation_page(document, path, operation).encode()
            pages[f"/docs/operations/{operation['operationId']}.md"] = page
        app.state["llms_pages"] = pages
    return pages


def _answer(request: Request[Any, Any, Any]) -> Response[bytes]:
    page = _pages(request.app).get(request.url.path)
    if page is None:
        raise NotFoundException()
    return Response(page, media_type=MARKDOWN, headers=CACHED)


class LlmsController(Controller):
    """The agent-readable description of the API."""

    include_in_schema = False

    @get(["/llms.txt", "/llms-full.txt", "/schema.md"], sync_to_thread=False)
    def index(self, request: Request[Any, Any, Any]) -> Response[bytes]:
        return _answer(request)

    @get("/docs/operations/{page:str}", sync_to_thread=False)
    def operation(self, request: Request[Any, Any, Any], page: FromPath[str]) -> Response[bytes]:
        return _answer(request)
