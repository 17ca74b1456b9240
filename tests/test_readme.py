"""The README and the guide (``docs/guide.md``) show what the product really does: every
example that shows its output is run here against the sample maps in ``maps/`` and a real
server, and must print what the page prints.

- ```` ```pycon ```` blocks are doctests (ELLIPSIS for figures that vary, such as times);
  the client examples' endpoint ``tcp://127.0.0.1:5555`` is replaced by a server started
  on a free port.
- ```` ```console ```` blocks: each ``$ pathserver ...`` line runs through ``cli.main`` and
  must print the lines that follow it (``...`` matches anything).
- ```` ```text ```` blocks of ``->`` requests and ``<-`` replies are sent over the wire; a
  reply's shown fields must match (a float to the decimals shown, a trailing ``...``
  allowing more fields, a ``"..."`` string any string).

Blocks without output (```` ```sh ````) only show commands and are not run.
"""

from __future__ import annotations

import contextlib
import doctest
import io
import json
import re
import shlex
import threading
from pathlib import Path

import msgpack
import pytest
import zmq

from pathserver import cli
from pathserver.maps.registry import MapRegistry
from pathserver.server.loop import Server

ROOT = Path(__file__).resolve().parent.parent
README_ENDPOINT = "tcp://127.0.0.1:5555"
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.MULTILINE | re.DOTALL)
FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


#: The pages whose examples run here.
PAGES = ("README.md", "docs/guide.md")


def blocks(path: Path, language: str) -> list[tuple[str, str]]:
    """The fenced blocks of one language in a Markdown file, each with where it starts
    (``README.md:12``)."""
    text = path.read_text()
    where = path.relative_to(ROOT)
    return [(f"{where}:{text[: m.start()].count(chr(10)) + 2}", m.group(2))
            for m in FENCE.finditer(text) if m.group(1) == language]


PAGE_BLOCKS = {page: {language: blocks(ROOT / page, language) for language in ("pycon", "console", "text")}
               for page in PAGES}
#: Every page's blocks of each language, in page order.
BLOCKS = {language: [block for page in PAGES for block in PAGE_BLOCKS[page][language]]
                 for language in ("pycon", "console", "text")}


@pytest.fixture(scope="module")
def sample_server():
    """A server on a free loopback port serving the repository's sample maps."""
    registry = MapRegistry(ROOT / "maps")
    registry.load_all()
    server = Server(registry, "tcp://127.0.0.1:0")
    endpoint = server.bind()
    thread = threading.Thread(target=server.run, name="readme-server", daemon=True)
    thread.start()
    yield endpoint
    server.stop()
    thread.join(5)
    server.close()


@pytest.fixture
def in_repo(monkeypatch):
    """The README's paths (``maps/example.map``) are relative to the repository."""
    monkeypatch.chdir(ROOT)


def test_the_readme_and_the_guide_have_examples_with_output():
    assert PAGE_BLOCKS["README.md"]["pycon"] and PAGE_BLOCKS["README.md"]["console"]
    assert all(PAGE_BLOCKS["docs/guide.md"][language] for language in ("pycon", "console", "text"))


@pytest.mark.parametrize("where, source", BLOCKS["pycon"], ids=[where for where, _ in BLOCKS["pycon"]])
def test_pycon_examples_print_what_the_readme_shows(where, source, sample_server, in_repo):
    source = source.replace(README_ENDPOINT, sample_server)
    page, line = where.rsplit(":", 1)
    test = doctest.DocTestParser().get_doctest(source, {}, where, page, int(line))
    output = io.StringIO()
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    runner.run(test, out=output.write)
    assert runner.failures == 0, output.getvalue()


def console_commands(source: str) -> list[tuple[str, str]]:
    """``$ command`` lines with the output lines that follow each."""
    commands = []
    for chunk in re.split(r"^\$ ", source, flags=re.MULTILINE)[1:]:
        command, _, output = chunk.partition("\n")
        commands.append((command, output))
    return commands


@pytest.mark.parametrize(
    "command, expected",
    [pair for _, source in BLOCKS["console"] for pair in console_commands(source)],
    ids=lambda v: v if v.startswith("pathserver") else "",
)
def test_console_examples_print_what_the_readme_shows(command, expected, in_repo):
    argv = shlex.split(command)
    assert argv[0] == "pathserver", f"only pathserver commands run here: {command}"
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        cli.main(argv[1:])
    checker = doctest.OutputChecker()
    assert checker.check_output(expected, printed.getvalue(), FLAGS), (
        f"$ {command}\nREADME shows:\n{expected}\nprinted:\n{printed.getvalue()}"
    )


# -- the wire examples -------------------------------------------------------------------

_MORE = "..."


class Shown(float):
    """A float as the README shows it: equal to a value that rounds to it."""

    def __new__(cls, text: str):
        value = super().__new__(cls, text)
        value.decimals = len(text.partition(".")[2].partition("e")[0])
        return value


def parse_shown(text: str):
    """A README reply: JSON, where ``, ...}`` allows more fields."""
    text = re.sub(r",\s*\.\.\.\s*}", f', "{_MORE}": true}}', text)
    return json.loads(text, parse_float=Shown)


def assert_matches(shown, actual, where: str = "reply") -> None:
    if isinstance(shown, dict):
        assert isinstance(actual, dict), f"{where}: expected a map, got {actual!r}"
        more = shown.get(_MORE, False)
        keys = [k for k in shown if k != _MORE]
        if not more:
            assert sorted(actual) == sorted(keys), f"{where}: fields {sorted(actual)} != shown {sorted(keys)}"
        for key in keys:
            assert key in actual, f"{where}: no field {key!r} in {actual!r}"
            assert_matches(shown[key], actual[key], f"{where}.{key}")
    elif isinstance(shown, list):
        assert isinstance(actual, list) and len(actual) == len(shown), f"{where}: {actual!r} != shown {shown!r}"
        for i, (s, a) in enumerate(zip(shown, actual)):
            assert_matches(s, a, f"{where}[{i}]")
    elif isinstance(shown, Shown):
        assert round(actual, shown.decimals) == shown, f"{where}: {actual!r} does not round to {shown}"
    elif shown == _MORE:
        assert isinstance(actual, str), f"{where}: {actual!r} is not a string"
    else:
        assert actual == shown and type(actual) is type(shown), f"{where}: {actual!r} != shown {shown!r}"


def exchanges(source: str) -> list[tuple[dict, str]]:
    """(request, shown reply text) pairs from ``->`` / ``<-`` lines (a message may continue
    on indented lines)."""
    messages = []
    for line in source.splitlines():
        if line.startswith(("-> ", "<- ")):
            messages.append([line[:2], line[3:]])
        else:
            messages[-1][1] += " " + line.strip()
    pairs = []
    for (kind, request), (reply_kind, reply) in zip(messages[::2], messages[1::2]):
        assert (kind, reply_kind) == ("->", "<-"), "requests and replies alternate"
        pairs.append((json.loads(request), reply))
    return pairs


@pytest.mark.parametrize(
    "request_, shown",
    [pair for _, source in BLOCKS["text"] if source.startswith("-> ") for pair in exchanges(source)],
    ids=lambda v: v.get("op", "") if isinstance(v, dict) else "",
)
def test_wire_examples_answer_what_the_readme_shows(request_, shown, sample_server):
    context = zmq.Context.instance()
    dealer = context.socket(zmq.DEALER)
    dealer.linger = 0
    dealer.sndtimeo = dealer.rcvtimeo = 5000
    try:
        dealer.connect(sample_server)
        dealer.send_multipart([b"", msgpack.packb(request_)])
        reply = msgpack.unpackb(dealer.recv_multipart()[-1])
    finally:
        dealer.close(linger=0)
    assert_matches(parse_shown(shown), reply)
