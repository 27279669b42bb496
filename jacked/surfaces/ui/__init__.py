"""`jacked ui`: a local web view of the catalog and the index (sessions, turns, stats, retrieve).

`server.py` is the HTTP layer (a Starlette app served by uvicorn: token and host checks, limits,
static files), `api.py` answers the JSON API with the same library functions the CLI uses, and
`static/` holds the page itself (plain JS, no build step, no CDN).
"""
