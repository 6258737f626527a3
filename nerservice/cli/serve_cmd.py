"""nerservice serve — the REST service (``api.main.create_app``) under uvicorn, behind the connection
guard of api/server.py."""
from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("serve", help="serve entity extraction over HTTP (FastAPI + uvicorn)",
                       description="Run the REST service: POST /v1/extract, GET /v1/models, GET / (a web page), "
                       "/healthz, /readyz, /metrics. Limits and batching are settings read from NERSERVICE_API_* "
                       "environment variables (see api/settings.py).")
    p.add_argument("--model", help="model folder, training output folder or store reference such as "
                   "demo@production (overrides NERSERVICE_API_MODEL; default: that variable)")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1; "
                   "0.0.0.0 only inside a container)")
    p.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    p.add_argument("--log-level", default="info", choices=["critical", "error", "warning", "info", "debug"])
    p.add_argument("--access-log", action="store_true",
                   help="log one line per request (off by default: a formatted log line per request costs CPU "
                   "the model could use, and /metrics counts requests by route and status anyway)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from api.server import serve
    from api.settings import load_settings

    settings = load_settings(**({"model": args.model} if args.model else {}))  # a coded error, not a traceback
    serve(settings, host=args.host, port=args.port, log_level=args.log_level, access_log=args.access_log)
    return 0
