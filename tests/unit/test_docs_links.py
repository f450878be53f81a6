"""The README is the front door and docs/*.md the rooms behind it: every
relative link, image and #anchor in them resolves, and the README stays short.

The checker is here, beside its tests (standard library only, no network):
markdown links and images, reference definitions and HTML <a href>/<img src>
outside fenced code blocks and code spans; http(s) and mailto are skipped.
A path must exist relative to the file that holds it; an anchor must be a
GitHub-style slug of a heading in its target (lowercase, punctuation other
than hyphens and underscores dropped, spaces to hyphens, -1, -2 ... for
repeats) or an HTML id/name there.
"""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path
from urllib.parse import unquote

import pytest


def _repo() -> Path:
    # The repository root, wherever in tests/ this file is moved to.
    for d in Path(__file__).resolve().parents:
        if (d / "README.md").is_file() and (d / "pyproject.toml").is_file():
            return d
    raise RuntimeError("no README.md and pyproject.toml above " + __file__)


REPO = _repo()
README_MAX_LINES = 300

FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
# A code span: a run of backticks to the next run as long, within a paragraph.
CODE_SPAN = re.compile(r"(`+)(?!`)(?:(?!\n[ \t]*\n)[\s\S])*?(?<!`)\1(?!`)")
# ](target) or ](<target>), with an optional "title".
INLINE = re.compile(r"\]\(\s*(<[^>\n]*>|[^)\s]+)(?:\s+(?:\"[^\"\n]*\"|'[^'\n]*'))?\s*\)")
REFDEF = re.compile(r"^ {0,3}\[[^\]\n]+\]:\s*(<[^>\n]*>|\S+)", re.M)
HTML_LINK = re.compile(r"<(?:a|img)\b[^>]*?\b(?:href|src)\s*=\s*[\"']([^\"']*)[\"']", re.I)
HTML_ID = re.compile(r"<[a-z][^>]*?\b(?:id|name)\s*=\s*[\"']([^\"']+)[\"']", re.I)
ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
EXTERNAL = re.compile(r"^(?:[a-z][a-z0-9+.-]*:|//)", re.I)  # http:, https:, mailto:, ...


def unfenced(text: str) -> str:
    """The text with fenced code blocks blanked out (the line count kept, so
    that line numbers still point at the source)."""
    out, fence = [], None
    for line in text.split("\n"):
        m = FENCE.match(line)
        if fence is None and m:
            fence = m.group(1)
            out.append("")
        elif fence is not None:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence) \
                    and not line.strip().lstrip(fence[0]):
                fence = None
            out.append("")
        else:
            out.append(line)
    return "\n".join(out)


def prose(text: str) -> str:
    """Neither fenced blocks nor code spans: where links are read."""
    return CODE_SPAN.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), unfenced(text))


def slug(heading: str) -> str:
    """GitHub's anchor for a heading's text."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link's text only
    text = re.sub(r"<[^>]+>", "", text).strip().lower()
    kept = "".join(c for c in text if c in " -" or unicodedata.category(c)[0] in "LMN"
                   or unicodedata.category(c) == "Pc")
    return kept.replace(" ", "-")


def anchors(text: str) -> set[str]:
    """Every anchor a file offers: its headings' slugs (repeats numbered) and HTML ids."""
    lines = unfenced(text).split("\n")
    seen: dict[str, int] = {}
    found: set[str] = set()
    for i, line in enumerate(lines):
        m = ATX.match(line)
        title = (m.group(2) or "") if m else None
        if title is None and i > 0 and SETEXT.match(line) and lines[i - 1].strip() \
                and not ATX.match(lines[i - 1]) and not lines[i - 1].lstrip().startswith(("|", ">", "-", "*")):
            title = lines[i - 1].strip()
        if title is None:
            continue
        base = slug(title)
        n = seen.get(base, 0)
        seen[base] = n + 1
        found.add(base if n == 0 else f"{base}-{n}")
    found.update(HTML_ID.findall(prose(text)))
    return found


def links(path: Path) -> list[tuple[int, str]]:
    """(line, target) of every link and image in a markdown file."""
    text = prose(path.read_text())
    found = []
    for rx in (INLINE, REFDEF, HTML_LINK):
        for m in rx.finditer(text):
            target = m.group(1)
            if target.startswith("<") and target.endswith(">"):
                target = target[1:-1]
            found.append((text.count("\n", 0, m.start(1)) + 1, target))
    return sorted(found)


def check(files: list[Path]) -> tuple[int, list[str]]:
    """(links checked, problems) over the given markdown files."""
    checked, problems, cache = 0, [], {}
    for f in files:
        for line, target in links(f):
            if EXTERNAL.match(target):
                continue
            checked += 1
            where = f"{f.name}:{line}: {target}"
            raw_path, _, fragment = target.partition("#")
            dest = (f.parent / unquote(raw_path)).resolve() if raw_path else f
            if not dest.exists():
                problems.append(f"{where}: no such file {unquote(raw_path)}")
                continue
            if not fragment:
                continue
            if dest.suffix.lower() != ".md":
                continue  # line anchors of code files and the like: not ours to check
            if dest not in cache:
                cache[dest] = anchors(dest.read_text())
            if unquote(fragment) not in cache[dest]:
                problems.append(f"{where}: no heading #{fragment} in {dest.name}")
    return checked, problems


def doc_files() -> list[Path]:
    return [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


# --- the tests -------------------------------------------------------------


def test_every_relative_link_and_anchor_resolves():
    checked, problems = check(doc_files())
    assert not problems, "\n".join(problems)
    # An empty parse would pass the line above: the docs hold many links.
    assert checked > 20, checked


def test_the_anchors_are_checked_too():
    """Links into another page's sections are among those checked."""
    targets = [t for f in doc_files() for _, t in links(f) if "#" in t and not EXTERNAL.match(t)]
    assert len(targets) > 10, targets
    assert any(t.startswith("docs/") and "#" in t for _, t in links(REPO / "README.md")), \
        "the README links no section of a docs page"


def test_every_docs_page_is_linked_from_the_readme():
    readme = {(REPO / t.partition("#")[0]).resolve() for _, t in links(REPO / "README.md")}
    unlinked = [p.name for p in sorted((REPO / "docs").glob("*.md")) if p.resolve() not in readme]
    assert not unlinked, f"docs pages the README does not link: {unlinked}"


def test_readme_is_a_front_door():
    lines = (REPO / "README.md").read_text().count("\n")
    assert lines <= README_MAX_LINES, f"README.md has {lines} lines, more than {README_MAX_LINES}: move detail to docs/"


def test_the_checker_reports_a_broken_path_and_a_broken_anchor(tmp_path):
    """Negative control: planted breakage is reported, by name, and only it."""
    (tmp_path / "other.md").write_text("# Other page\n\n## Same\n\n## Same\n\nSetext title\n---\n")
    (tmp_path / "pic.png").write_bytes(b"")
    page = tmp_path / "page.md"
    page.write_text("\n".join([
        "# Title (`with code`)",
        "",
        "[ok](#title-with-code) [ok2](other.md#same-1) [ok3](other.md#setext-title)",
        "![ok4](pic.png) <img src=\"pic.png\"> [web](https://example.com/nowhere#x) [m](mailto:a@b.c)",
        "[gone](missing-page.md) and [lost](#no-such-heading) and [far](other.md#nowhere)",
        "<a href=\"gone-too.html\">x</a>",
        "",
        "[ref]: missing-ref.md",
        "",
        "```sh",
        "[in a fence](fenced-broken.md) ![x](fenced.png)",
        "```",
        "",
        "`[in a span](span-broken.md)` and ``a ` [y](span2.md)``",
        "",
    ]))
    checked, problems = check([page])
    text = "\n".join(problems)
    assert "missing-page.md" in text and "no such file" in text, text
    assert "#no-such-heading" in text, text
    assert "#nowhere" in text and "other.md" in text, text
    assert "gone-too.html" in text and "missing-ref.md" in text, text
    assert len(problems) == 5, text
    for ignored in ("fenced-broken", "fenced.png", "span-broken", "span2", "example.com", "mailto"):
        assert ignored not in text, (ignored, text)
    assert checked == 10, checked  # 5 good (img twice), 5 broken; the web and mailto ones skipped


@pytest.mark.parametrize("heading, want", [
    ("Faults and expansion (`ybbench run --event`)", "faults-and-expansion-ybbench-run---event"),
    ("k6's own report", "k6s-own-report"),
    ("Reports (`ybbench report`, `ybbench demo`)", "reports-ybbench-report-ybbench-demo"),
    ("Run it (Docker)", "run-it-docker"),
    ("snake_case and [a link](x.md)", "snake_case-and-a-link"),
])
def test_slugs_are_githubs(heading, want):
    assert slug(heading) == want
