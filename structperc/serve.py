"""``structperc-serve``: a trained model as an HTTP service (``inference/service.py``: the
endpoints, request batching and errors) on uvicorn.

    structperc-serve model=runs/main host=127.0.0.1 port=8000
    curl -s localhost:8000/entities -H 'content-type: application/json' \\
        -d '{"text": "Peter Blackburn met officials in Brussels."}'

Settings are ``key=value`` as ``structperc-tag``'s (``model``, ``tagger``, ``n_test``,
``constraints``, ``device``, ``window``, ``threads``, ``batch_size``, ``plugins``: modules of your
own, e.g. ``plugins=my_features,other``) and the server's: ``host``, ``port``, ``max_bytes`` (the
largest request body), ``max_batch_tokens`` (the tokens of requests decoded at once),
``log_level``.  The model is loaded (and its compiled kernels run once) before the server listens;
SIGTERM or Ctrl-C stops it taking connections, answers the requests in flight, then exits.  A bad
setting or model: one line and exit status 2.
"""

from __future__ import annotations

import sys

from structperc.cli import fail_cleanly, key_value_settings, usage_error

PROGRAM = "structperc-serve"
USAGE = "model=RUN_DIR [host=127.0.0.1] [port=8000] [key=value ...]  (--help)"
DEFAULTS = {
    "model": ...,
    "host": "127.0.0.1",
    "port": 8000,
    "tagger": None,
    "n_test": None,
    "constraints": None,
    "device": "cpu",
    "window": 2048,
    "threads": 2,
    "batch_size": 16,
    "max_bytes": 1 << 20,
    "max_batch_tokens": 1 << 15,
    "log_level": "info",
    "plugins": None,
}
GRACE_SECONDS = 60  # how long SIGTERM waits for the requests in flight


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    s = key_value_settings(PROGRAM, USAGE, argv, DEFAULTS, __doc__.split("\n\n")[0])
    if s["n_test"] is not None:
        if not s["n_test"].isdigit():
            usage_error(PROGRAM, USAGE, f"n_test={s['n_test']!r}: expected a whole number")
        s["n_test"] = int(s["n_test"])
    import uvicorn

    from structperc.data.document import Document
    from structperc.inference.files import TaggerSettings
    from structperc.inference.model_card import model_card
    from structperc.inference.service import make_app
    from structperc.inference.tagger import MissingColumns
    from structperc.inference.token_batch import TokenBatch
    from structperc.plugins import plugin_names

    keys = ("model", "tagger", "n_test", "constraints", "batch_size", "device", "window")
    try:
        plugins = plugin_names(s["plugins"])
        tagger = TaggerSettings(**{k: s[k] for k in keys}, threads=s["threads"], plugins=plugins)
        tagger = tagger.load()
        warm = [Document(tokens=["Structperc", "serves", "."])]  # loads the kernels now
        try:
            tagger.label_batch(TokenBatch.of(warm), tagger.tags_columns(warm))
        except MissingColumns:  # (a model that reads columns only CoNLL requests give)
            pass
    except (ValueError, OSError) as err:
        fail_cleanly(PROGRAM, err)
    app = make_app(tagger, model_card(tagger, s["tagger"]), s["max_bytes"], s["max_batch_tokens"])
    uvicorn.run(
        app,
        host=s["host"],
        port=s["port"],
        log_level=s["log_level"],
        timeout_graceful_shutdown=GRACE_SECONDS,
    )


if __name__ == "__main__":
    main()
