"""The inspector's ASGI app (Starlette, Jinja2 templates): routes, the token guard, the CSRF
check and the response headers (docs/inspector.md).

Every request needs the token: as ``?token=`` (the URL the command prints, which also sets an
HttpOnly, SameSite=Strict cookie) or that cookie; without it the answer is 403. Every POST needs
the page's CSRF value (a form field); without it, 403. Every answer carries a strict
Content-Security-Policy (no script at all, styles and images from the page only).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from pathlib import Path
from typing import Any
from urllib.parse import quote

import jinja2
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.middleware.base import BaseHTTPMiddleware, RequestResponseEndpoint
from starlette.requests import Request
from starlette.responses import FileResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Route
from starlette.templating import Jinja2Templates

from ..entries import Entry
from ..errors import AgentMemoryError, ConflictError
from . import views
from .markdown import to_html
from .source import Source

__all__ = ["COOKIE", "CSP", "create_app", "csrf_value"]

HERE = Path(__file__).resolve().parent
COOKIE = "agentmemory_ui"
CSP = (
    "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; "
    "frame-ancestors 'none'; base-uri 'none'"
)
"""The Content-Security-Policy of every answer: no script runs, nothing loads from elsewhere."""


def csrf_value(token: str) -> str:
    """The CSRF value of the pages a server with ``token`` serves (an HMAC of the token)."""
    return hmac.new(token.encode(), b"agentmemory-ui-csrf", hashlib.sha256).hexdigest()[:32]


class _Guard(BaseHTTPMiddleware):
    """The token on every request and the headers on every answer (the CSRF value is checked
    by the one POST endpoint, which reads the form)."""

    def __init__(self, app: Any, token: str) -> None:
        super().__init__(app)
        self.token = token

    async def dispatch(self, request: Request, call_next: RequestResponseEndpoint) -> Response:
        given = request.query_params.get("token")
        from_query = given is not None and secrets.compare_digest(given, self.token)
        cookie = request.cookies.get(COOKIE, "")
        if not from_query and not (cookie and secrets.compare_digest(cookie, self.token)):
            return self._headers(
                PlainTextResponse("403: this page needs the token in the URL it printed", 403)
            )
        response = await call_next(request)
        if from_query:
            response.set_cookie(COOKIE, self.token, httponly=True, samesite="strict")
        return self._headers(response)

    @staticmethod
    def _headers(response: Response) -> Response:
        response.headers["Content-Security-Policy"] = CSP
        response.headers["X-Content-Type-Options"] = "nosniff"
        response.headers["Referrer-Policy"] = "no-referrer"
        response.headers["Cache-Control"] = "no-store"
        return response


def create_app(source: Source, *, token: str) -> Starlette:
    """The inspector over ``source``; ``token`` is required on every request. Writing pages
    (edit, forget, purge) answer only when ``source.writer`` is set (``--write``). Pages that
    read the store run on Starlette's thread pool, never on the event loop."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(HERE / "templates")), autoescape=True
    )  # every {{ }} escaped; only the Markdown filter's output is marked safe
    templates = Jinja2Templates(env=env)
    env.filters["markdown"] = to_html
    env.filters["q"] = lambda s: quote(str(s), safe="")
    csrf = csrf_value(token)

    def page(request: Request, name: str, status: int = 200, **context: Any) -> Response:
        context.update(
            request=request, store=source.label, csrf=csrf, write=source.writer is not None
        )
        response: Response = templates.TemplateResponse(request, name, context, status_code=status)
        return response

    def scopes(request: Request) -> Response:
        asked = request.query_params.get("scope")
        try:
            page_no = int(request.query_params.get("page", "1"))
        except ValueError:
            page_no = 1
        with source.journal() as journal:
            rows = views.scope_rows(journal, pages={asked: page_no} if asked else None)
        return page(request, "scopes.html", rows=rows, page_entries=views.PAGE_ENTRIES)

    def entry(request: Request) -> Response:
        scope, name = request.path_params["scope"], request.path_params["name"]
        with source.journal() as journal:
            view = views.entry_view(journal, scope, name)
        return page(request, "entry.html", view=view, conflict=None)

    def block(request: Request) -> Response:
        q = request.query_params
        policy = "default" if q.get("policy") == "default" else "none"
        hint = q.get("hint", "").strip()
        with source.journal() as journal:
            every = journal.scopes()
            chosen = [s for s in q.getlist("scope") if s in every] or every
            view = views.block_view(journal, chosen, policy=policy)
        error = ""
        if hint:
            try:
                with source.index() as index:
                    view = views.with_part(view, index, hint)
            except AgentMemoryError as exc:
                error = str(exc)
        return page(request, "block.html", view=view, every=every, error=error)

    def search(request: Request) -> Response:
        q = request.query_params
        query = q.get("q", "").strip()
        mode = q.get("mode", "auto")
        mode = mode if mode in ("auto", "hybrid", "bm25", "vector") else "auto"
        view, error = None, ""
        with source.journal() as journal:
            every = journal.scopes()
        chosen = [s for s in q.getlist("scope") if s in every] or every
        if query:
            try:
                with source.index() as index:
                    view = views.search_view(index, query, chosen, mode=mode)
            except AgentMemoryError as exc:
                error = str(exc)
        return page(
            request, "search.html", view=view, query=query, mode=mode, every=every, error=error
        )

    def health(request: Request) -> Response:
        return page(request, "health.html", health=views.health(source.verify, source.repair))

    async def write(request: Request) -> Response:
        scope, name = request.path_params["scope"], request.path_params["name"]
        if source.writer is None:
            return PlainTextResponse(
                "405: the inspector runs read-only (start it with --write)", 405
            )
        form = await request.form()
        sent = str(form.get("csrf", ""))
        if not sent or not secrets.compare_digest(sent, csrf):
            return PlainTextResponse("403: the form's CSRF value is wrong", 403)
        return await run_in_threadpool(_write, request, scope, name, form)

    def _write(request: Request, scope: str, name: str, form: Any) -> Response:
        assert source.writer is not None
        action = str(form.get("action", ""))
        if_hash = str(form.get("if_hash", ""))
        content = str(form.get("content", "")).replace("\r\n", "\n")
        conflict = None
        error = ""
        try:
            with source.writer() as store:
                current = _live(store, scope, name)
                if (current.hash if current else "") != if_hash:
                    conflict = {"mine": content, "theirs": current}
                elif action == "save" and current is not None:
                    store.put(current.copy(content=content), if_hash=if_hash)
                elif action == "forget" and current is not None:
                    store.forget(scope, name)
                elif action == "purge":
                    store.purge(scope, name, reason=str(form.get("reason", "")))
                else:
                    error = f"unknown action {action!r}"
        except ConflictError as exc:  # changed between our read and the write
            conflict = {"mine": content, "theirs": None, "why": str(exc)}
        except (AgentMemoryError, ValueError) as exc:
            error = str(exc)
        if conflict is None and not error:
            url = request.url_for("entry", scope=scope, name=name)
            return RedirectResponse(str(url), status_code=303)
        with source.journal() as journal:
            view = views.entry_view(journal, scope, name)
        status = 409 if conflict is not None else 400
        return page(request, "entry.html", status, view=view, conflict=conflict, error=error)

    def style(request: Request) -> Response:
        return FileResponse(HERE / "static" / "inspector.css", media_type="text/css")

    routes = [
        Route("/", scopes, name="scopes"),
        Route("/entry/{scope}/{name}", entry, name="entry"),
        Route("/entry/{scope}/{name}", write, methods=["POST"], name="write"),
        Route("/block", block, name="block"),
        Route("/search", search, name="search"),
        Route("/health", health, name="health"),
        Route("/static/inspector.css", style, name="style"),
    ]
    return Starlette(routes=routes, middleware=[Middleware(_Guard, token=token)])


def _live(store: Any, scope: str, name: str) -> Entry | None:
    from ..errors import NotFoundError

    try:
        entry: Entry = store.get(scope, name)
    except NotFoundError:
        return None
    return entry
