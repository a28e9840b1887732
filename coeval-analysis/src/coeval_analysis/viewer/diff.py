"""Two students' answers to one prompt, word by word: what only A wrote is struck out,
what only B wrote is underlined (``/r/<k>/diff?dp=ID&a=STUDENT&b=STUDENT``)."""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping, Sequence
from http import HTTPStatus
from urllib.parse import quote

from coeval_analysis.viewer.pages import escaped, layout, pre_block
from coeval_analysis.viewer.store import RunStore

__all__ = ["diff_html", "diff_view", "tokens"]

_TOKEN = re.compile(r"\s+|\w+|[^\w\s]")
_CSS = ("<style>#diff{white-space:pre-wrap;max-width:60rem;border:1px solid #ccc;padding:.5rem;font-size:.9rem}"
        "del{background:#f4b4ae}ins{background:#b7e4b0;text-decoration:underline}</style>")


def tokens(text: str) -> list[str]:
    """Words, runs of white space and single punctuation marks (joined, they give back ``text``)."""
    return _TOKEN.findall(text)


def diff_html(a: str, b: str) -> tuple[str, int, int]:
    """HTML of the word diff from ``a`` to ``b``, and how many words only A and only B hold."""
    ta, tb = tokens(a), tokens(b)
    out: list[str] = []
    only_a = only_b = 0
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, ta, tb, autojunk=False).get_opcodes():
        if op == "equal":
            out.append(escaped("".join(ta[i1:i2])))
            continue
        if i2 > i1:
            out.append(f"<del>{escaped(''.join(ta[i1:i2]))}</del>")
            only_a += sum(1 for t in ta[i1:i2] if not t.isspace())
        if j2 > j1:
            out.append(f"<ins>{escaped(''.join(tb[j1:j2]))}</ins>")
            only_b += sum(1 for t in tb[j1:j2] if not t.isspace())
    return "".join(out), only_a, only_b


def _picker(base: str, dp: str, students: Sequence[str], a: str, b: str) -> str:
    def select(name: str, current: str) -> str:
        options = "".join(f'<option value="{escaped(s)}"{" selected" if s == current else ""}>{escaped(s)}</option>'
                          for s in students)
        return f'<label>{name.upper()} <select name="{name}">{options}</select></label>'

    return (f'<form id="diff-pick" method="get" action="{base}/diff"><input type="hidden" name="dp" value="{escaped(dp)}">'
            f'{select("a", a)} {select("b", b)} <button type="submit">Compare</button></form>')


def diff_view(store: RunStore, base: str, query: Mapping[str, str]) -> tuple[int, str]:
    dp = query.get("dp", "")
    answers = {str(r["student_model_id"]): r for r in store.query_dicts(
        "SELECT student_model_id, response, status FROM responses WHERE datapoint_id = ? ORDER BY 1", [dp])}
    prompt = store.query("SELECT prompt FROM datapoints WHERE id = ?", [dp])
    if len(answers) < 2:
        return HTTPStatus.NOT_FOUND, layout("Not found", f"<p>Datapoint {escaped(dp)} has fewer than two answers.</p>",
                                            base)
    students = list(answers)
    a = query.get("a", "")
    a = a if a in answers else students[0]
    b = query.get("b", "")
    b = b if b in answers and b != a else next(s for s in students if s != a)
    html, only_a, only_b = diff_html(str(answers[a]["response"] or ""), str(answers[b]["response"] or ""))
    body = (
        f'{_CSS}<p><a href="{base}/datapoint/{quote(dp, safe="")}">datapoint {escaped(dp)}</a></p>'
        f'<h2>Prompt</h2>{pre_block(prompt[0][0] if prompt else "(not recorded)", "prompt")}'
        f"<h2>Answers</h2>{_picker(base, dp, students, a, b)}"
        f'<p id="diff-count"><del>{only_a} words only in {escaped(a)}</del> &middot; '
        f"<ins>{only_b} words only in {escaped(b)}</ins></p>"
        f'<div id="diff">{html}</div>'
    )
    return HTTPStatus.OK, layout(f"{a} vs {b} on {dp}", body, base)
