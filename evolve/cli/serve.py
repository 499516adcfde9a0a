"""``evolve serve RUNS_DIR``: the runs and their inbox in the browser (see :mod:`evolve.serve`)."""

from __future__ import annotations

import getpass
import ipaddress
import secrets
import socket
from pathlib import Path
from types import FrameType

import click

from evolve import defaults
from evolve.cli.common import friendly
from evolve.model.errors import UsageError


def loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def bound_socket(host: str, port: int) -> socket.socket:
    """A listening socket on ``host``:``port`` (0: a free port), bound before the address is
    printed, so the address printed is the one served."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host.strip("[]"), port))
    except OSError as exc:
        sock.close()
        why = exc.strerror or exc
        raise UsageError(f"--host {host} --port {port}: cannot listen there ({why})") from None
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


@click.command(name="serve")
@click.argument("runs_dir", type=click.Path(file_okay=False))
@click.option("--host", default=None, metavar="ADDRESS",
              help=f"Where to listen (default {defaults.SERVE_HOST}, this machine only). Any other "
                   "address must be given here, and is warned about.")
@click.option("--port", default=defaults.SERVE_PORT, show_default=True, type=click.IntRange(0, 65535),
              help="The port (0: any free one).")
@click.option("--token-file", default=None, type=click.Path(dir_okay=False),
              help="Tokens to accept, one 'TOKEN [NAME]' a line (default: a fresh token, printed in "
                   "the address).")
@click.option("--as", "by", default=None,
              help="Who decides with a token that names nobody (default: the user name).")
@click.option("--resume-on-decision", is_flag=True,
              help="Resume a run (evolve execute --resume, in a worker the server owns) after each "
                   "decision on it.")
@friendly
def serve(runs_dir: str, host: str | None, port: int, token_file: str | None, by: str | None,
          resume_on_decision: bool) -> None:
    """A local web application over RUNS_DIR's run folders: the runs live, one run's plan,
    events and tool results, and the inbox of approvals and questions to decide."""
    try:
        import uvicorn

        from evolve.serve.app import Settings, make_app
        from evolve.serve.auth import Auth, read_tokens
    except ImportError as exc:
        raise UsageError(f"evolve serve needs the serve extra: pip install 'evolve[serve]' ({exc})") from None
    root = Path(runs_dir)
    if not root.is_dir():
        raise UsageError(f"{root}: not a folder of run folders")
    person = by or getpass.getuser()
    if token_file is not None:
        tokens = read_tokens(Path(token_file), person)
        shown = ""
    else:
        token = secrets.token_urlsafe(32)
        tokens = {token: person}
        shown = f"?token={token}"
    address = host or defaults.SERVE_HOST
    local = loopback(address)
    if not local:
        click.echo(f"warning: listening on {address}, not this machine only: anyone who can reach it "
                   "and has a token can see the runs and decide on them (use https in front of it)",
                   err=True)
    sock = bound_socket(address, port)
    port = sock.getsockname()[1]
    settings = Settings(root=root.resolve(), auth=Auth(tokens), resume_on_decision=resume_on_decision,
                        loopback_only=local)
    app = make_app(settings)
    shown_host = f"[{address}]" if ":" in address else address
    click.echo(f"evolve serve: {root} at http://{shown_host}:{port}/{shown}", nl=True)
    if token_file is not None:
        click.echo(f"  (tokens from {token_file})")
    click.echo("  Ctrl-C to stop", nl=True)
    config = uvicorn.Config(app, log_level="warning", access_log=False,
                            timeout_graceful_shutdown=int(defaults.SERVE_SHUTDOWN_GRACE))
    stopping = app.state.server.stopping

    class Server(uvicorn.Server):
        """uvicorn's, which also ends the event streams when told to stop (else it would wait
        for the browsers to close them)."""

        def handle_exit(self, sig: int, frame: FrameType | None) -> None:
            stopping.set()
            super().handle_exit(sig, frame)

    Server(config).run(sockets=[sock])


COMMANDS = (serve,)
