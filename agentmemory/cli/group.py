"""The top-level click group, ``agentmemory``, and how errors become one line: the
library's errors and ``OSError`` as :class:`CliError` (exit status 1), click's usage errors as
one line ending ``(see 'agentmemory <command> --help')`` (exit status 2)."""

from __future__ import annotations

import logging
import os
import sys
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO, Any, TextIO

import click

from ..errors import AgentMemoryError
from ..progress import PROGRESS_LOGGER


class CliError(click.ClickException):
    """An error the command line reports as one line, ``agentmemory: <message>``, on stderr,
    exiting with status 1. A leading ``agentmemory: `` in the message is not repeated."""

    def __init__(self, message: str) -> None:
        for prefix in ("agentmemory: ", "agentmemory.tools: "):
            if message.startswith(prefix):
                message = message[len(prefix) :]
        super().__init__(message)

    def show(self, file: IO[Any] | None = None) -> None:
        """Print ``agentmemory: <message>`` to stderr."""
        click.echo(f"agentmemory: {self.format_message()}", err=True)


class _UsageError(click.UsageError):
    """A usage error shown as one line on stderr, ``agentmemory: <click's message> (see
    '<command> --help')``, instead of click's usage, hint and message; exit status 2."""

    def show(self, file: IO[Any] | None = None) -> None:
        """Print the one line to stderr."""
        where = self.ctx.command_path if self.ctx is not None else "agentmemory"
        message = self.format_message()
        for prefix in ("agentmemory: ", "agentmemory.tools: "):
            message = message.removeprefix(prefix)
        click.echo(f"agentmemory: {message} (see '{where} --help')", err=True)


def _one_line_usage(exc: click.UsageError) -> click.UsageError:
    """``exc`` as a :class:`_UsageError`; ``agentmemory`` alone still prints the help."""
    if isinstance(exc, _UsageError | click.exceptions.NoArgsIsHelpError):
        return exc
    return _UsageError(exc.format_message(), exc.ctx)


class _Group(click.Group):
    """The top-level group: turns the library's errors and click's usage errors into one line
    each (:class:`CliError`, exit status 1; :class:`_UsageError`, exit status 2)."""

    def make_context(
        self,
        info_name: str | None,
        args: list[str],
        parent: click.Context | None = None,
        **extra: Any,
    ) -> click.Context:
        """Parse the group's own options; a usage error is one line (:class:`_UsageError`)."""
        try:
            return super().make_context(info_name, args, parent, **extra)
        except click.UsageError as exc:
            raise _one_line_usage(exc) from None

    def invoke(self, ctx: click.Context) -> Any:
        """Run the subcommand; an :class:`~agentmemory.AgentMemoryError` or ``OSError`` it
        raises becomes a :class:`CliError` (one line, exit status 1), a usage error (a bad
        option or argument, found while parsing or later) a :class:`_UsageError` (one line,
        exit status 2)."""
        try:
            return super().invoke(ctx)
        except click.UsageError as exc:
            raise _one_line_usage(exc) from None
        except AgentMemoryError as exc:
            raise CliError(str(exc)) from None
        except BrokenPipeError:  # `agentmemory journal | head`: the reader has had enough
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            sys.exit(1)
        except OSError as exc:
            raise CliError(_os_error(exc)) from None


def _os_error(exc: OSError) -> str:
    if exc.filename is not None and exc.strerror:
        return f"{exc.strerror}: {exc.filename}"
    return str(exc) or type(exc).__name__


def _show_warning(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: TextIO | None = None,
    line: str | None = None,
) -> None:
    """Print one of our warnings (``agentmemory.errors``: a damaged lexical index, an index out
    of step, a dead server record) as one ``agentmemory:`` line on stderr, as errors are; any
    other warning as Python prints it."""
    if category.__module__ == "agentmemory.errors":
        text = str(message).strip().removeprefix("agentmemory: ")
        click.echo(f"agentmemory: {text}", err=True)
        return
    _PYTHON_SHOWWARNING(message, category, filename, lineno, file, line)


_PYTHON_SHOWWARNING = warnings.showwarning


class _ProgressLines(logging.Handler):
    """Shows the library's progress lines (:data:`agentmemory.progress.PROGRESS_LOGGER`, INFO)
    on the stderr of the moment (click's, so a test runner's capture sees them too)."""

    def emit(self, record: logging.LogRecord) -> None:
        """Print the record's message as one line on stderr."""
        click.echo(record.getMessage(), err=True)


def _show_progress() -> None:
    """Route the progress logger to stderr once per process (it does not reach the root
    logger's handlers, so a line is never printed twice)."""
    log = logging.getLogger(PROGRESS_LOGGER)
    if not any(isinstance(h, _ProgressLines) for h in log.handlers):
        log.addHandler(_ProgressLines(logging.INFO))
    log.setLevel(logging.INFO)
    log.propagate = False


@contextmanager
def progress_muted() -> Iterator[None]:
    """No library progress lines inside (a command that has said what it waits for itself)."""
    log = logging.getLogger(PROGRESS_LOGGER)
    level = log.level
    log.setLevel(logging.WARNING)
    try:
        yield
    finally:
        log.setLevel(level)


@click.group(cls=_Group)
@click.version_option(package_name="agentmemory")
def main() -> None:
    """agentmemory: memory for LLM agents, kept in a journaled store.

    Entries are addressed as SCOPE/NAME (kebab-case, e.g. user/editor-prefs). The store folder
    is --path, else $AGENTMEMORY_PATH, else the user data folder. Add --json for programs.
    Try `agentmemory demo` for a tour on real data.
    """
    warnings.showwarning = _show_warning
    _show_progress()
