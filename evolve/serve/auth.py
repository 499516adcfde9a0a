"""Who may use ``evolve serve``, and how each request proves it.

- A token: printed at start in the URL (``http://127.0.0.1:PORT/?token=...``, as Jupyter does)
  or read from ``--token-file`` (one ``TOKEN [NAME]`` a line, so each person can have their own,
  named). Every request carries it, or gets 401: a browser's first visit with ``?token=`` gets a
  session cookie (HttpOnly, SameSite=Strict) and is sent on without the token in its address;
  scripts send ``Authorization: Bearer TOKEN``.
- The person a decision is journaled under is the token's owner (``--as`` names the owner of a
  token without a name, else the user running the server).
- Cross-site requests: every request that changes something is a POST. A browser's POST must
  carry its session's CSRF token (a form field or the ``X-CSRF-Token`` header), and an
  ``Origin`` (when the browser sends one, as they all do on POST) equal to the server's own.
  A script's Bearer token is no ambient credential, so its POSTs need neither.
"""

from __future__ import annotations

import hmac
import secrets
import threading
from dataclasses import dataclass, field
from pathlib import Path

from evolve.model.errors import UsageError

COOKIE = "evolve_session"
CSRF_FIELD = "csrf"
CSRF_HEADER = "x-csrf-token"


@dataclass
class Session:
    """A browser's session: whose it is, its CSRF token, and the message of its last decision
    (shown once on the page it is sent to after a POST)."""

    person: str
    csrf: str = field(default_factory=lambda: secrets.token_urlsafe(24))
    flash: list[tuple[str, str]] = field(default_factory=list)


def read_tokens(path: Path, default_person: str) -> dict[str, str]:
    """``--token-file``: one ``TOKEN [NAME]`` a line (``#`` comments, blank lines skipped); a
    token without a name is ``default_person``'s. A bad file is one line naming it and why."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"--token-file {path}: cannot be read ({exc.strerror or exc})") from None
    except UnicodeDecodeError as exc:
        raise UsageError(f"--token-file {path}: not UTF-8 text (byte {exc.start})") from None
    tokens: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        words = line.split("#", 1)[0].split(None, 1)
        if not words:
            continue
        token = words[0]
        if len(token) < 16:
            raise UsageError(f"--token-file {path}: line {number}: a token of {len(token)} characters "
                             "is too short to guess-proof (16 or more)")
        if token in tokens:
            raise UsageError(f"--token-file {path}: line {number}: the same token twice")
        tokens[token] = words[1].strip() if len(words) > 1 else default_person
    if not tokens:
        raise UsageError(f"--token-file {path}: no token in it")
    return tokens


class Auth:
    """The tokens the server accepts and the browser sessions it gave out."""

    def __init__(self, tokens: dict[str, str]) -> None:
        self.tokens = dict(tokens)
        self.sessions: dict[str, Session] = {}
        self.lock = threading.Lock()

    def owner(self, token: str | None) -> str | None:
        """The person a token belongs to (compared in constant time), or ``None``."""
        if not token:
            return None
        found = None
        for known, person in self.tokens.items():
            if hmac.compare_digest(known.encode(), token.encode()):
                found = person
        return found

    def open_session(self, person: str) -> str:
        sid = secrets.token_urlsafe(32)
        with self.lock:
            self.sessions[sid] = Session(person)
        return sid

    def session(self, sid: str | None) -> Session | None:
        if not sid:
            return None
        with self.lock:
            return self.sessions.get(sid)

    @staticmethod
    def csrf_ok(session: Session, sent: str | None) -> bool:
        return bool(sent) and hmac.compare_digest(session.csrf.encode(), (sent or "").encode())
